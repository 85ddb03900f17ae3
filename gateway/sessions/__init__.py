"""Session routing: one worker task per active session with a FIFO mailbox."""

from gateway.sessions.keys import session_key
from gateway.sessions.manager import SessionManager, TurnHandler
from gateway.sessions.worker import SessionWorker

__all__ = ["SessionManager", "SessionWorker", "TurnHandler", "session_key"]
