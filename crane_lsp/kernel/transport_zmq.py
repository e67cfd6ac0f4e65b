"""The ZeroMQ transport: a kernel reached through its connection file (jupyter_client's async client).

Today's path for every local kernel. One reader task per channel; see ``send`` for the one subtle part
(ZeroMQ's edge-triggered wake-ups).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import zmq

from crane_lsp.kernel.connection import ConnectionNotFound, kernel_alive, read_connection_info
from crane_lsp.kernel.transport import CHANNELS, Channel, MessageHandler, TransportClosed, TransportError

if TYPE_CHECKING:
    from crane_lsp.kernel.remote import KernelUrl

log = logging.getLogger(__name__)

#: starts of a new kernel whose process ends before it answers (a port taken meanwhile, see start_kernel)
START_ATTEMPTS = 3


class _EndedBeforeReady(Exception):
    """A new kernel's process ended before it answered: worth starting again on new ports."""


async def _alive(manager: Any) -> bool:
    """Whether a kernel manager's process still runs; a manager that cannot tell counts as alive."""
    try:
        return bool(await manager.is_alive())
    except Exception:
        return True


def read_and_check(path: Path) -> tuple[dict[str, Any], bool | None]:
    """The connection info and whether its kernel is alive (blocking: run in a thread)."""
    info = read_connection_info(path)
    return info, kernel_alive(info)


class ZmqTransport:
    """jupyter_client's ``AsyncKernelClient`` behind the ``KernelTransport`` seam."""

    kind = "zmq"
    kernel_url: KernelUrl | None = None
    gone_reason: str | None = None

    def __init__(
        self,
        client: Any,
        manager: Any | None = None,
        connection_file: Path | None = None,
        *,
        reader_wakeup_s: float = 1.0,
        alive_check_s: float = 0.5,
    ) -> None:
        self.client = client
        self.manager = manager  # set when this transport owns the kernel
        self.connection_file = connection_file
        #: the channel readers look at their socket at least this often, whatever ZeroMQ signalled
        self.reader_wakeup_s = reader_wakeup_s
        self.alive_check_s = alive_check_s
        self._tasks: list[asyncio.Task[None]] = []
        self._closed = False

    @property
    def owns_kernel(self) -> bool:
        return self.manager is not None

    @classmethod
    async def from_file(cls, path: Path, timeout: float, **kw: float) -> ZmqTransport:
        """Channels to the kernel of ``path``; ``TransportError`` quickly when nothing answers there."""
        from jupyter_client.asynchronous import AsyncKernelClient

        try:
            # off the event loop: reading a file (refused when it is a FIFO) and a TCP connect
            info, alive = await asyncio.wait_for(asyncio.to_thread(read_and_check, path), timeout)
        except ConnectionNotFound as exc:
            raise TransportError(str(exc)) from exc
        except asyncio.TimeoutError as exc:
            why = f"reading the connection file {path} took longer than {timeout:g} s"
            raise TransportError(why) from exc
        if alive is False:
            raise TransportError(f"the kernel of {path.name} is not running (nothing listens on its ports)")
        client = AsyncKernelClient()
        client.load_connection_info(info)  # type: ignore[arg-type]
        client.start_channels()
        return cls(client, connection_file=path, **kw)

    @classmethod
    async def start_kernel(
        cls, cwd: str | Path | None, kernel_name: str, *, timeout: float, quiet: bool, **kw: float
    ) -> ZmqTransport:
        """A fresh local kernel owned by the transport, ready (``wait_for_ready``).

        A kernel whose process ends before it answers is started again, on new ports, up to
        ``START_ATTEMPTS`` times: jupyter_client picks free ports and the kernel binds them later, so
        another process can take one in between ("Address already in use").
        """
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                return await cls._start_once(cwd, kernel_name, timeout=timeout, quiet=quiet, **kw)
            except _EndedBeforeReady as exc:
                if attempt == START_ATTEMPTS:
                    raise TransportError(f"the new kernel did not start: {exc}") from exc
                log.info("a new %r kernel ended before it answered (%s); starting it again", kernel_name, exc)
        raise AssertionError("unreachable")

    @classmethod
    async def _start_once(
        cls, cwd: str | Path | None, kernel_name: str, *, timeout: float, quiet: bool, **kw: float
    ) -> ZmqTransport:
        """A ready transport; ``_EndedBeforeReady`` when the kernel's process ended before answering."""
        from jupyter_client.manager import AsyncKernelManager

        manager = AsyncKernelManager(kernel_name=kernel_name)
        env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
        extra: dict[str, Any] = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL} if quiet else {}
        try:
            await manager.start_kernel(cwd=str(cwd) if cwd else None, env=env, **extra)
        except Exception as exc:
            raise TransportError(f"could not start a {kernel_name!r} kernel: {exc}") from exc
        client = manager.client()
        client.start_channels()
        transport = cls(client, manager=manager, connection_file=Path(manager.connection_file), **kw)
        try:
            await client.wait_for_ready(timeout=timeout)
        except BaseException as exc:
            ended = not isinstance(exc, asyncio.CancelledError) and not await _alive(manager)
            await transport.close()
            if isinstance(exc, asyncio.CancelledError):
                raise
            if ended:
                raise _EndedBeforeReady(str(exc)) from exc
            raise TransportError(f"the new kernel did not start: {exc}") from exc
        return transport

    async def start(self, on_message: MessageHandler) -> None:
        for name in CHANNELS:
            self._tasks.append(asyncio.create_task(self._read(name, on_message), name=f"kernel-zmq-{name}"))

    async def _read(self, name: Channel, on_message: MessageHandler) -> None:
        channel = getattr(self.client, f"{name}_channel")
        while True:
            try:
                # a bounded wait: should a wake-up ever be lost (see ``send``), a queued reply is
                # found on the next look instead of never
                msg = await channel.get_msg(timeout=self.reader_wakeup_s)
            except queue.Empty:
                continue
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a malformed message or a closed socket: skip, keep reading
                if self._closed:
                    return
                log.debug("kernel zmq %s channel: %s", name, exc)
                await asyncio.sleep(0.05)
                continue
            try:
                on_message(name, msg)
            except Exception:  # a listener or a surprise message must not kill the reader
                log.exception("kernel link: handling a %s message failed", name)

    def new_message(self, msg_type: str, content: dict[str, Any]) -> dict[str, Any]:
        msg: dict[str, Any] = self.client.session.msg(msg_type, content)
        return msg

    def send(self, channel: Channel, msg: dict[str, Any]) -> None:
        if self._closed:
            raise TransportClosed("the kernel link was closed")
        zmq_channel = getattr(self.client, f"{channel}_channel")
        zmq_channel.send(msg)
        # jupyter_client's Session.send writes through a plain (synchronous) shadow of the asyncio
        # socket, so zmq.asyncio never hears of the send. ZMQ_FD is edge-triggered, and a send lets
        # libzmq process pending commands: when the reply to an earlier request on this socket has
        # just arrived, its "readable" edge is consumed here and the reader's pending poll would wait
        # forever, with both replies queued (two concurrent requests both timed out). Reading
        # ZMQ_EVENTS through the asyncio socket makes pyzmq look again and wake the reader.
        with contextlib.suppress(Exception):
            zmq_channel.socket.get(zmq.EVENTS)

    async def is_alive(self) -> bool:
        """The process (own kernel) or the ports (connected kernel) are still there."""
        if self.manager is not None:
            return bool(await self.manager.is_alive())
        if self.connection_file is None:
            return True
        try:
            _info, alive = await asyncio.wait_for(
                asyncio.to_thread(read_and_check, self.connection_file), self.alive_check_s * 4
            )
        except ConnectionNotFound:
            return False
        except asyncio.TimeoutError:
            return True  # a slow file system proves nothing about the kernel
        return alive is not False

    async def interrupt(self) -> bool:
        if self.manager is None:
            return False
        await self.manager.interrupt_kernel()
        return True

    async def restart(self) -> None:
        if self.manager is None:
            raise NotImplementedError("only a kernel crane started can be restarted over its connection file")
        await self.manager.restart_kernel(now=True)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task
        self.client.stop_channels()
        if self.manager is not None:
            with contextlib.suppress(Exception):
                await self.manager.shutdown_kernel(now=True)

    def describe(self) -> str:
        return f"the kernel of {self.connection_file}" if self.connection_file else "a local kernel"
