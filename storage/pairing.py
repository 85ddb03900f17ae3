"""Pairing codes (stored hashed) and approved users."""

from __future__ import annotations

import hashlib
import secrets

from storage.base import StoreBase
from storage.codec import scrub
from storage.sqlconn import Conn
from storage.types import ApprovedUser, PairingCode, row_to

__all__ = ["PairingMixin", "CODE_ALPHABET", "hash_code"]

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I


def hash_code(platform: str, code: str) -> str:
    normal = "".join(code.split()).upper()
    return hashlib.sha256(f"hermes-pairing:{platform}:{normal}".encode()).hexdigest()


class PairingMixin(StoreBase):
    """Pairing requests from unknown users and the approved-user list."""

    async def create_pairing_code(
        self, platform: str, user_id: str, *, display: str | None = None, ttl: float = 3600.0,
        length: int = 8,
    ) -> str:
        """Create a code for `user_id` and return the plaintext (only its hash is stored)."""
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(length))

        async def op(conn: Conn) -> None:
            now = self._clock()
            await conn.execute(
                "INSERT INTO pairing_codes(platform, code_hash, user_id, display, created_at,"
                " expires_at) VALUES (?, ?, ?, ?, ?, ?)",
                (platform, hash_code(platform, code), str(user_id), scrub(display), now, now + ttl),
            )

        await self._write(op)
        return code

    async def approve_pairing_code(self, platform: str, code: str) -> ApprovedUser | None:
        """Approve the user behind an unexpired, unused code; None when no such code."""

        async def op(conn: Conn) -> ApprovedUser | None:
            now = self._clock()
            rows = list(
                await conn.execute_fetchall(
                    "SELECT user_id, display FROM pairing_codes WHERE platform = ?"
                    " AND code_hash = ? AND approved_at IS NULL AND expires_at > ?",
                    (platform, hash_code(platform, code), now),
                )
            )
            if not rows:
                return None
            user_id, display = rows[0]
            await conn.execute(
                "UPDATE pairing_codes SET approved_at = ? WHERE platform = ? AND user_id = ?"
                " AND approved_at IS NULL",
                (now, platform, user_id),
            )
            await conn.execute(
                "INSERT INTO approved_users(platform, user_id, display, approved_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT(platform, user_id) DO UPDATE SET"
                " display = excluded.display, approved_at = excluded.approved_at",
                (platform, user_id, display, now),
            )
            return ApprovedUser(platform, user_id, display, now)

        return await self._write(op)

    async def pending_pairing_codes(self, platform: str | None = None) -> list[PairingCode]:
        """Unexpired, unapproved requests, newest first."""
        rows = await self._fetchall(
            "SELECT * FROM pairing_codes WHERE approved_at IS NULL AND expires_at > ?"
            " AND (CAST(? AS TEXT) IS NULL OR platform = ?) ORDER BY created_at DESC",
            (self._clock(), platform, platform),
        )
        return [row_to(PairingCode, r) for r in rows]

    async def count_pairing_codes_since(self, platform: str, user_id: str, since: float) -> int:
        """How many codes this user was given since `since` (for rate limiting)."""
        row = await self._fetchone(
            "SELECT COUNT(*) FROM pairing_codes WHERE platform = ? AND user_id = ?"
            " AND created_at >= ?",
            (platform, str(user_id), since),
        )
        return int(row[0]) if row else 0

    async def revoke_user(self, platform: str, user_id: str) -> bool:
        """Remove an approval and the user's open codes; returns whether one was removed."""

        async def op(conn: Conn) -> bool:
            cur = await conn.execute(
                "DELETE FROM approved_users WHERE platform = ? AND user_id = ?",
                (platform, str(user_id)),
            )
            await conn.execute(
                "DELETE FROM pairing_codes WHERE platform = ? AND user_id = ?"
                " AND approved_at IS NULL",
                (platform, str(user_id)),
            )
            return cur.rowcount == 1

        return await self._write(op)

    async def is_approved(self, platform: str, user_id: str) -> bool:
        row = await self._fetchone(
            "SELECT 1 FROM approved_users WHERE platform = ? AND user_id = ?",
            (platform, str(user_id)),
        )
        return row is not None

    async def approved_users(self, platform: str | None = None) -> list[ApprovedUser]:
        rows = await self._fetchall(
            "SELECT * FROM approved_users WHERE (CAST(? AS TEXT) IS NULL OR platform = ?)"
            " ORDER BY platform, approved_at",
            (platform, platform),
        )
        return [row_to(ApprovedUser, r) for r in rows]
