"""Settings from what the editor sends: ``initializationOptions`` and ``workspace/configuration``.

Editors send either the ``crane`` section itself or an object that contains it; both are accepted.
Invalid values never stop the server: the caller gets the defaults and a message for the user.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pydantic is slow to import: only once settings arrive
    from crane_lsp.settings import Settings

SECTION = "crane"


def plain(value: Any) -> Any:
    """JSON-like data from whatever pygls handed over (dicts, lists, or its namedtuple ``Object``)."""
    if hasattr(value, "_asdict"):
        value = value._asdict()
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def section(options: Any) -> dict[str, Any]:
    """The ``crane`` section of ``options`` (or ``options`` itself when it is already that section)."""
    data = plain(options)
    if not isinstance(data, dict):
        return {}
    inner = data.get(SECTION)
    if isinstance(inner, dict):
        return inner
    return data


def parse_settings(options: Any) -> tuple[Settings, str | None]:
    """``(settings, None)`` when valid; ``(defaults, why)`` when not, ``why`` naming the bad fields."""
    from pydantic import ValidationError

    from crane_lsp.settings import Settings

    try:
        return Settings.model_validate(section(options)), None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg']}" for err in exc.errors()
        )
        return Settings(), f"crane: invalid settings ({problems}); using the defaults"
