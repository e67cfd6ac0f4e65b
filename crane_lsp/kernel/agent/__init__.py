"""The kernel side of crane: STANDARD LIBRARY ONLY, sent into the user's kernel as source text.

Its modules are joined, in ``probe_install.SOURCES`` order, into one private module of the kernel's
``sys.modules`` (never ``user_ns``); the client imports only ``wire`` from here (kinds, keys,
default budgets). Nothing in this package imports another of its modules at run time: a name from
a sibling is simply there once joined (``if TYPE_CHECKING:`` imports tell mypy where it comes from).
"""
