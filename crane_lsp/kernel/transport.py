"""The seam between ``KernelLink`` and the wire that reaches a kernel.

Why a seam: the link's logic (routing replies by ``msg_id``, following IOPub status, probing on a
subshell, every trace-free guarantee) is the same whether the kernel is reached through a connection
file (ZeroMQ, ``transport_zmq``), a Jupyter Server's kernel websocket (``transport_ws``) or the editor's
own connection relayed over LSP (``transport_relay``). A transport only moves Jupyter messages (dicts in
jupyter_client's shape: ``header``, ``parent_header``, ``metadata``, ``content``, ``msg_id``,
``msg_type``) and answers for the kernel's existence; it never interprets replies.

Contract:
- ``start(on_message)``: begin delivering every message that arrives, as ``on_message(channel, msg)``,
  on the event loop, in arrival order per channel; call once.
- ``new_message(msg_type, content)``: a message with a fresh header of this transport's session (the
  link may rewrite ``msg_id`` and add ``subshell_id`` before sending).
- ``send(channel, msg)``: queue a message without blocking; raises ``TransportClosed`` when closed
  for good. While a transport reconnects it may buffer or drop; the link's timeouts and ``is_alive``
  cover a lost request.
- ``is_alive()``: False only when the kernel is proven gone, or unreachable for longer than the
  transport's grace (a heartbeat-like verdict); True when unknown.
- ``interrupt()``: True when the transport interrupted the kernel itself (a signal, a REST call);
  False: the link sends ``interrupt_request`` on the control channel.
- ``describe()``: where the kernel is, for messages and logs; never a token or key.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from crane_lsp.kernel.remote import KernelUrl

__all__ = [
    "CHANNELS",
    "Channel",
    "KernelTransport",
    "MessageHandler",
    "TransportClosed",
    "TransportError",
    "TransportRefused",
]

Channel = Literal["shell", "control", "iopub", "stdin"]
#: the channels a link reads (stdin is never used: crane's requests set ``allow_stdin=False``)
CHANNELS: tuple[Channel, ...] = ("shell", "control", "iopub")
MessageHandler = Callable[[Channel, dict[str, Any]], None]


class TransportError(RuntimeError):
    """A transport could not reach its kernel; ``str()`` is one line fit for a user, without secrets."""


class TransportClosed(TransportError):
    """The transport was closed (by the link) or its kernel is gone for good."""


class TransportRefused(TransportError):
    """The server refused us (a wrong token: 401/403); retrying cannot help."""


@runtime_checkable
class KernelTransport(Protocol):
    """What ``KernelLink`` needs from a wire to one kernel."""

    #: ``"zmq"``, ``"websocket"``, ``"relay"``: for messages and figures
    kind: str
    #: the connection file when reached through one (ZeroMQ), else None
    connection_file: Path | None
    #: the kernel's URL when reached through a Jupyter Server, else None
    kernel_url: KernelUrl | None

    @property
    def owns_kernel(self) -> bool:
        """This transport started the kernel and shuts it down on ``close``."""
        ...

    #: why ``is_alive`` last said False (one line for the user), None when it did not or cannot say
    gone_reason: str | None

    async def start(self, on_message: MessageHandler) -> None: ...

    def new_message(self, msg_type: str, content: dict[str, Any]) -> dict[str, Any]: ...

    def send(self, channel: Channel, msg: dict[str, Any]) -> None: ...

    async def is_alive(self) -> bool: ...

    async def interrupt(self) -> bool: ...

    async def restart(self) -> None:
        """Restart the kernel (own or remote where the server allows); ``NotImplementedError`` else."""
        ...

    async def close(self) -> None:
        """Stop delivering; release sockets; shut the kernel down when ``owns_kernel``. Idempotent."""
        ...

    def describe(self) -> str: ...
