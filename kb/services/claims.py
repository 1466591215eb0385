"""Claims (API.md "Claims"): claim, renew, release and list work in progress on a subject.

Atomic under concurrency without application locks: a unique partial index keeps one
unreleased claim per (bank, normalised subject), and a claim is one ``INSERT … ON CONFLICT DO
NOTHING``. Of any number of concurrent claimers exactly one inserts; the others read the
winner's row and are told who holds it. An expired claim never blocks: the claim that finds it
closes it first (``released_by = "expired"``), and every reader treats ``expires_at <= now`` as
ended, so no scheduled job is needed for correctness.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone

from kb import audit
from kb.errors import Conflict, Forbidden, InvalidInput, NotFound
from kb.inputs import parse_int_id
from kb.models import Bank, Claim, Entry, EntryStatus, OperationKind
from kb.unit_of_work import unit_of_work

DEFAULT_TTL_SECONDS = 1800
MIN_TTL_SECONDS = 10
MAX_TTL_SECONDS = 7 * 24 * 3600
MAX_SUBJECT = 500
MAX_HOLDER = 200
MAX_NOTE = 2000
EXPIRED = "expired"

_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class ClaimCaller:
    """Who claims, renews or releases: the token (None for staff and commands), the actor
    written in the audit, and whether it may act on others' claims (a ``curate`` token or
    staff; every such act is audited)."""

    actor: str
    token_id: int | None = None
    curator: bool = False

    def owns(self, held: Claim) -> bool:
        """True when the claim was made by this caller: the same token, or (for a claim made
        without a token) the same actor without a token. ``holder`` never decides."""
        if held.token_id is not None:
            return held.token_id == self.token_id
        return self.token_id is None and held.created_by == self.actor


def _caller(caller: ClaimCaller | None, actor: str) -> ClaimCaller:
    return caller or ClaimCaller(actor=actor or audit.current().actor)


def _not_yours(held: Claim, action: str) -> Forbidden:
    return Forbidden(
        f"Claim {held.pk} was made by another token; only that token or a curator "
        f"(scope curate) may {action} it.",
        code="claim_not_yours",
        fields={"claim": f"Made by another token (holder {held.holder!r})."},
    )


def _on_behalf(held: Claim, owned: bool) -> dict:
    """Audit details naming whose claim a curator acted on (nothing when it was the caller's)."""
    return {} if owned else {"on_behalf_of": held.created_by, "claim_token": held.token_id}


@dataclass
class ClaimResult:
    """The outcome of :func:`claim`: the live claim and whether it is new (else renewed)."""

    claim: Claim
    created: bool


def _text(value, field: str, limit: int, *, required: bool) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string.", fields={field: "Must be a string."})
    value = value.strip()
    if required and not value:
        raise InvalidInput(f"{field} is required.", fields={field: "Required."})
    if len(value) > limit:
        raise InvalidInput(
            f"{field} must be at most {limit} characters.", fields={field: "Too long."}
        )
    if "\x00" in value:
        raise InvalidInput(f"{field} must not contain NUL.", fields={field: "Contains NUL."})
    return value


def _ttl(value) -> int:
    if value is None:
        return DEFAULT_TTL_SECONDS
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidInput(
            "ttl_seconds must be a whole number of seconds.", fields={"ttl_seconds": "Integer."}
        )
    if not MIN_TTL_SECONDS <= value <= MAX_TTL_SECONDS:
        raise InvalidInput(
            f"ttl_seconds must be from {MIN_TTL_SECONDS} to {MAX_TTL_SECONDS}.",
            fields={"ttl_seconds": f"Between {MIN_TTL_SECONDS} and {MAX_TTL_SECONDS}."},
        )
    return value


def subject_entry(bank: Bank, subject: str) -> Entry | None:
    """The entry of ``bank`` a subject names by short id or key (merged ids follow the
    survivor), else None: such a subject is free text."""
    entries = Entry.objects.filter(bank=bank).exclude(status=EntryStatus.DELETED)
    entry = entries.filter(short_id=subject).first() or entries.filter(key=subject).first()
    seen = set()
    while entry is not None and entry.merged_into_id and entry.merged_into_id not in seen:
        seen.add(entry.merged_into_id)
        entry = Entry.objects.filter(pk=entry.merged_into_id).first()
    return entry


def normalise_subject(subject: str, entry: Entry | None = None) -> str:
    """One key per subject: ``entry:<short_id>`` for an entry (whether named by id or key),
    else ``text:`` and the casefolded text with runs of white space collapsed."""
    if entry is not None:
        return f"entry:{entry.short_id}"
    return "text:" + _SPACES.sub(" ", subject.strip()).casefold()


def _live(queryset, now: dt.datetime):
    return queryset.filter(released_at__isnull=True, expires_at__gt=now)


def claim(
    bank: Bank,
    subject,
    holder,
    *,
    ttl_seconds=None,
    note=None,
    actor: str = "",
    caller: ClaimCaller | None = None,
    attempts: int = 5,
) -> ClaimResult:
    """Claim ``subject`` for ``holder`` for ``ttl_seconds``. A new claim is ``created`` and
    belongs to ``caller``'s token. Claiming a live claim again with the same holder renews it
    (new expiry, new note if given) when the caller made it, or is a curator (audited as such);
    otherwise ``Forbidden`` ``claim_not_yours``. Another holder's live claim raises
    ``Conflict`` ``claim_held`` naming holder, since and expiry."""
    subject = _text(subject, "subject", MAX_SUBJECT, required=True)
    holder = _text(holder, "holder", MAX_HOLDER, required=True)
    note_text = _text(note, "note", MAX_NOTE, required=False) if note is not None else None
    ttl = _ttl(ttl_seconds)
    entry = subject_entry(bank, subject)
    key = normalise_subject(subject, entry)
    caller = _caller(caller, actor)
    actor = caller.actor

    for _ in range(attempts):
        with transaction.atomic():
            now = timezone.now()
            expires_at = now + dt.timedelta(seconds=ttl)
            # An expired claim never blocks: close it before trying to insert.
            Claim.objects.filter(
                bank=bank, subject_key=key, released_at__isnull=True, expires_at__lte=now
            ).update(released_at=now, released_by=EXPIRED)
            new_id = _insert_unless_held(
                bank, subject, key, entry, holder, note_text or "", now, expires_at, caller
            )
            if new_id is not None:
                with unit_of_work(
                    bank, OperationKind.CLAIM, reason=f"claim {subject}", actor=actor
                ) as op:
                    audit.record(op, claim=new_id, subject=subject, holder=holder, ttl=ttl)
                return ClaimResult(Claim.objects.get(pk=new_id), created=True)
            held = (
                _live(Claim.objects.filter(bank=bank, subject_key=key), now)
                .select_for_update()
                .first()
            )
            if held is None:
                continue  # released or expired between our insert and this read: try again
            return _renew(bank, held, subject, holder, note_text, ttl, now, caller)
    raise Conflict(
        "The claim kept changing hands while we tried; nothing was written — retry.",
        code="write_conflict",
    )


def _renew(
    bank: Bank, held: Claim, subject: str, holder: str, note_text, ttl: int, now, caller
) -> ClaimResult:
    """Renew the live claim ``held`` (inside the claim's transaction, row locked): another
    holder's claim is ``claim_held``; the same holder renews when the caller made it or is a
    curator (audited as acting on its behalf), else ``claim_not_yours``."""
    if held.holder != holder:
        raise Conflict(
            f"{subject!r} is claimed by {held.holder} until {held.expires_at.isoformat()}.",
            code="claim_held",
            fields={
                "holder": held.holder,
                "since": held.since.isoformat(),
                "expires_at": held.expires_at.isoformat(),
            },
            extra={"claim": held.pk},
        )
    owned = caller.owns(held)
    if not owned and not caller.curator:
        raise _not_yours(held, "renew")
    held.expires_at = now + dt.timedelta(seconds=ttl)
    held.renewed_at = now
    update_fields = ["expires_at", "renewed_at"]
    if note_text is not None:
        held.note = note_text
        update_fields.append("note")
    held.save(update_fields=update_fields)
    reason = f"renew {subject}" if owned else f"curator renews {held.created_by}'s claim"
    with unit_of_work(bank, OperationKind.CLAIM, reason=reason, actor=caller.actor) as op:
        audit.record(
            op,
            claim=held.pk,
            subject=subject,
            holder=holder,
            ttl=ttl,
            renew=True,
            **_on_behalf(held, owned),
        )
    return ClaimResult(held, created=False)


def _insert_unless_held(bank, subject, key, entry, holder, note, now, expires_at, caller):
    """``INSERT … ON CONFLICT DO NOTHING`` against the unique partial index: the id of the new
    claim, or None when an unreleased claim on the subject exists (or is being inserted by a
    concurrent transaction, which this statement waits for)."""
    table = Claim._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {table} (bank_id, subject, subject_key, entry_id, holder, note, since,
                                 expires_at, released_by, created_by, token_id)
            VALUES (%s, %s, %s, %s, %s, %s, %s, %s, '', %s, %s)
            ON CONFLICT (bank_id, subject_key) WHERE released_at IS NULL DO NOTHING
            RETURNING id
            """,
            [
                bank.pk,
                subject,
                key,
                entry.pk if entry else None,
                holder,
                note,
                now,
                expires_at,
                caller.actor,
                caller.token_id,
            ],
        )
        row = cursor.fetchone()
    return row[0] if row else None


def find_claim(bank: Bank, claim_id) -> Claim:
    """A claim of ``bank`` by id (404 ``claim_not_found`` for anything else)."""
    pk = parse_int_id(claim_id, "claim_id")
    found = Claim.objects.filter(bank=bank, pk=pk).first()
    if found is None:
        raise NotFound(f"No claim {claim_id!r} in bank {bank.slug!r}.", code="claim_not_found")
    return found


def release(
    bank: Bank,
    claim_id,
    *,
    actor: str = "",
    reason: str = "",
    caller: ClaimCaller | None = None,
) -> Claim:
    """End a claim now. Only the token that made it, or a curator, releases a live claim (a
    curator's release is audited naming whose claim it was); anyone else gets ``Forbidden``
    ``claim_not_yours``. Releasing a claim that already ended changes nothing (idempotent)."""
    caller = _caller(caller, actor)
    actor = caller.actor
    with transaction.atomic():
        found = find_claim(bank, claim_id)
        held = Claim.objects.select_for_update().get(pk=found.pk)
        if held.released_at is not None:
            return held
        now = timezone.now()
        if held.expires_at <= now:
            held.released_at, held.released_by = now, EXPIRED
            held.save(update_fields=["released_at", "released_by"])
            return held
        owned = caller.owns(held)
        if not owned and not caller.curator:
            raise _not_yours(held, "release")
        held.released_at, held.released_by = now, actor
        held.save(update_fields=["released_at", "released_by"])
        if not owned:
            reason = f"{actor} released {held.created_by or 'another'}'s claim" + (
                f": {reason}" if reason else ""
            )
        with unit_of_work(
            bank, OperationKind.RELEASE, reason=reason or f"release {held.subject}", actor=actor
        ) as op:
            audit.record(
                op,
                claim=held.pk,
                subject=held.subject,
                holder=held.holder,
                **_on_behalf(held, owned),
            )
    return held


def live_claims(
    bank: Bank,
    *,
    subject: str | None = None,
    entries: list[Entry] | None = None,
    subjects: list[str] | None = None,
    limit: int = 200,
) -> list[Claim]:
    """Live claims of ``bank``, oldest first: all of them, or those on ``subject``, or those
    naming any of ``entries`` or any of the free-text ``subjects``."""
    now = timezone.now()
    queryset = _live(Claim.objects.filter(bank=bank), now)
    if subject is not None:
        subject = _text(subject, "subject", MAX_SUBJECT, required=True)
        queryset = queryset.filter(
            subject_key=normalise_subject(subject, subject_entry(bank, subject))
        )
    if entries is not None or subjects is not None:
        keys = [normalise_subject("", e) for e in entries or []]
        keys += [normalise_subject(s) for s in subjects or [] if s.strip()]
        queryset = queryset.filter(subject_key__in=keys)
    return list(queryset.order_by("since", "id")[:limit])
