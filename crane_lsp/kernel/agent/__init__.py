"""The kernel side of crane: STANDARD LIBRARY ONLY, sent into the user's kernel as source text.

Its modules are joined, in ``probe_install.SOURCES`` order, into one private module of the kernel's
``sys.modules`` (never ``user_ns``). Nothing here imports a sibling at run time: a sibling's name is
simply there once joined (``if TYPE_CHECKING:`` imports tell mypy where it comes from), so most of
these modules run only joined. The client imports ``wire`` (kinds, keys, default budgets), which
needs nothing else; ``refusal`` is importable alone too.
"""
