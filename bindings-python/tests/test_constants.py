"""The core's status names and limits, as the native module exports them (bindings-python/src/
constants.rs): each one is what the queue enforces (so an export wired to the wrong constant
fails here), and the package shows them rather than a copy: the OpenAPI document (which the
dashboard reads), the metrics, the CLI's help and the worker loops."""

from __future__ import annotations

import functools
import io
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

import deadletter
import pytest
from deadletter import _deadletter as core
from deadletter import cli
from deadletter.http import _metrics, document

PACKAGE = Path(deadletter.__file__).resolve().parent
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def rejected(call: Callable[[], Any], field: str) -> bool:
    """Whether ``call`` raises `ValidationError` naming ``field``."""
    try:
        call()
    except deadletter.ValidationError as error:
        return field in [e["field"] for e in error.errors]
    return False


def test_statuses_are_the_lifecycle_a_message_goes_through() -> None:
    assert core.STATUSES == ("pending", "processing", "succeeded", "dead")
    q = deadletter.open().queue("q")
    first, second = q.enqueue("a", max_retries=1), q.enqueue("b", max_retries=1)
    seen = [first.status]
    claimed = q.claim()
    assert claimed is not None
    seen.append(claimed.status)
    seen.append(q.succeed(claimed.id, lease_token=claimed.lease_token).status)
    claimed = q.claim()
    assert claimed is not None and claimed.id == second.id
    seen.append(q.fail(claimed.id, "boom", lease_token=claimed.lease_token).status)
    assert tuple(seen) == core.STATUSES
    assert set(q.stats().to_dict()) >= set(core.STATUSES)


def test_bulk_statuses_are_the_ones_each_bulk_action_takes() -> None:
    assert core.BULK_STATUSES == {
        "replay_all": ("dead",),
        "delete_all": ("succeeded", "dead"),
        "retry_now_all": ("pending",),
        "move_all": ("pending", "dead"),
    }
    q = deadletter.open().queue("q")
    for name, allowed in core.BULK_STATUSES.items():
        act = getattr(q, name)
        if name == "move_all":
            act = functools.partial(act, "elsewhere")
        for status in core.STATUSES:
            assert rejected(lambda: act(status=status), "status") is (status not in allowed), (
                name,
                status,
            )


def test_each_limit_is_the_one_the_queue_enforces() -> None:
    db = deadletter.open(clock=lambda: T0)
    q = db.queue("q")
    high = core.MAX_QUEUE_CHARS
    assert db.queue("x" * high).enqueue("p").queue == "x" * high
    assert rejected(lambda: db.queue("x" * (high + 1)), "queue")
    high = core.MAX_IDEMPOTENCY_KEY_CHARS
    assert q.enqueue("p", idempotency_key="k" * high).idempotency_key == "k" * high
    assert rejected(lambda: q.enqueue("p", idempotency_key="k" * (high + 1)), "idempotency_key")
    low, high = core.MAX_RETRIES_RANGE
    assert [q.enqueue("p", max_retries=n).max_retries for n in (low, high)] == [low, high]
    assert rejected(lambda: q.enqueue("p", max_retries=low - 1), "max_retries")
    assert rejected(lambda: q.enqueue("p", max_retries=high + 1), "max_retries")
    assert q.enqueue("p").max_retries == core.DEFAULT_MAX_RETRIES
    low, high = core.DELAY_RANGE_MS
    delayed = q.enqueue("p", delay=timedelta(milliseconds=high))
    assert delayed.retry_after == T0 + timedelta(milliseconds=high)
    assert q.enqueue("p", delay=timedelta(milliseconds=low)).retry_after is None
    assert rejected(lambda: q.enqueue("p", delay=timedelta(milliseconds=high + 1)), "delay")
    assert rejected(lambda: q.enqueue("p", delay=timedelta(milliseconds=low - 1)), "delay")
    low, high = core.LEASE_RANGE_MS
    for lease in (low, high):
        leased = q.claim(lease=timedelta(milliseconds=lease))
        assert leased is not None
        assert leased.lease_expires_at == T0 + timedelta(milliseconds=lease)
    assert rejected(lambda: q.claim(lease=timedelta(milliseconds=low - 1)), "lease")
    assert rejected(lambda: q.claim(lease=timedelta(milliseconds=high + 1)), "lease")
    low, high = core.LIST_LIMIT_RANGE
    assert rejected(lambda: q.list(limit=low - 1), "limit")
    assert rejected(lambda: q.list(limit=high + 1), "limit")
    assert len(q.list(limit=high)) == len(q.list()) < high
    assert rejected(lambda: q.enqueue_many(["p"] * (core.MAX_BATCH + 1)), "items")
    assert len(q.enqueue_many(["p"] * core.MAX_BATCH)) == core.MAX_BATCH
    assert len(q.list()) == core.DEFAULT_LIST_LIMIT
    assert len(q.claim_many(core.MAX_CLAIM_MANY)) == core.MAX_CLAIM_MANY
    assert rejected(lambda: q.claim_many(core.MAX_CLAIM_MANY + 1), "n")
    with pytest.raises(deadletter.NotFoundError):
        q.get(core.MAX_ID)
    assert rejected(lambda: q.get(core.MAX_ID + 1), "id")


def test_the_limits_of_groups_expiry_retry_in_and_settings_are_the_queues() -> None:
    db = deadletter.open(clock=lambda: T0)
    q = db.queue("q")
    high = core.MAX_GROUP_CHARS
    assert q.enqueue("p", group="g" * high).group == "g" * high
    assert rejected(lambda: q.enqueue("p", group="g" * (high + 1)), "group")
    low, high = core.EXPIRES_IN_RANGE_MS
    for ms in (low, high):
        expiring = q.enqueue("p", expires_in=timedelta(milliseconds=ms))
        assert expiring.expires_at == T0 + timedelta(milliseconds=ms)
        assert q.set_settings(expires_in=timedelta(milliseconds=ms)).expires_in == timedelta(
            milliseconds=ms
        )
    for ms in (low - 1, high + 1):
        assert rejected(lambda: q.enqueue("p", expires_in=timedelta(milliseconds=ms)), "expires_in")
        assert rejected(
            lambda: q.set_settings(expires_in=timedelta(milliseconds=ms)), "expires_in"
        )
    low, high = core.RETRY_IN_RANGE_MS
    for ms in (low, high):
        claimed = q.claim()
        assert claimed is not None
        failed = q.fail(claimed.id, "x", retry_in=timedelta(milliseconds=ms))
        assert failed.retry_after == T0 + timedelta(milliseconds=ms)
    claimed = q.claim()
    assert claimed is not None
    for ms in (low - 1, high + 1):
        assert rejected(lambda: q.fail(claimed.id, "x", retry_in=timedelta(milliseconds=ms)),
                        "retry_in")
    for outcome in core.ON_EXPIRY:
        assert q.set_settings(on_expiry=outcome).on_expiry == outcome
    assert rejected(lambda: q.set_settings(on_expiry="keep"), "on_expiry")  # type: ignore[arg-type]
    low, high = core.BACKOFF_MULTIPLIER_RANGE
    for multiplier in (low, high):
        assert deadletter.Backoff(multiplier=multiplier).multiplier == multiplier
    for multiplier in (low - 0.5, high + 0.5):
        assert rejected(lambda: deadletter.Backoff(multiplier=multiplier), "multiplier")


def test_payload_limits_and_instants_are_the_queues() -> None:
    low, high = core.MAX_PAYLOAD_BYTES_RANGE
    for limit in (low, high):
        deadletter.open(max_payload_bytes=limit).close()
    for limit in (low - 1, high + 1):
        assert rejected(lambda: deadletter.open(max_payload_bytes=limit), "max_payload_bytes")
    q = deadletter.open().queue("q")
    assert len(q.enqueue("x" * core.DEFAULT_MAX_PAYLOAD_BYTES).payload) > 0
    assert rejected(lambda: q.enqueue("x" * (core.DEFAULT_MAX_PAYLOAD_BYTES + 1)), "payload")
    first, last = (datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=ms)
                   for ms in core.TIME_RANGE_MS)
    assert (first, last) == (
        datetime.min.replace(tzinfo=timezone.utc),
        datetime.max.replace(tzinfo=timezone.utc, microsecond=999000),
    )
    for now in (first, last):
        assert deadletter.open(clock=lambda: now).queue("q").enqueue("p").created_at == now


def test_history_error_length_and_the_expired_lease_error_are_the_queues() -> None:
    now = [T0]
    q = deadletter.open(clock=lambda: now[0]).queue("q", backoff=deadletter.Backoff(initial=0))
    m = q.enqueue("p", max_retries=1)
    for attempt in range(core.MAX_HISTORY + 1):
        claimed = q.claim(lease=1)
        assert claimed is not None
        if attempt == 0:
            now[0] += timedelta(seconds=2)  # its lease runs out: a failed attempt
            assert q.reap() == 1
        else:
            q.fail(claimed.id, "x" * (core.MAX_ERROR_BYTES + 1), lease_token=claimed.lease_token)
        q.replay(m.id)
    m = q.get(m.id)
    assert (len(m.errors), m.errors_dropped) == (core.MAX_HISTORY, 1)
    last = m.errors[-1]["error"]  # (replay cleared last_error)
    kept = len(last) - len(last.lstrip("x"))  # the error's first bytes, then a marker
    assert (kept, last[kept:]) == (core.MAX_ERROR_BYTES, "…[truncated 1 bytes]")
    lease_expired = deadletter.open(clock=lambda: now[0]).queue("r")
    lease_expired.enqueue("p", max_retries=1)
    assert lease_expired.claim(lease=1) is not None
    now[0] += timedelta(seconds=2)
    assert lease_expired.reap() == 1
    assert lease_expired.list(status="dead")[0].last_error == core.LEASE_EXPIRED


def test_the_openapi_document_shows_the_cores_names_and_limits() -> None:
    doc = document()
    schemas = doc["components"]["schemas"]
    message = schemas["Message"]["properties"]
    assert message["status"]["enum"] == list(core.STATUSES)
    assert message["queue"]["maxLength"] == core.MAX_QUEUE_CHARS
    assert (message["max_retries"]["minimum"], message["max_retries"]["maximum"]) == (
        core.MAX_RETRIES_RANGE
    )
    assert message["errors"]["maxItems"] == core.MAX_HISTORY
    assert message["idempotency_key"]["anyOf"][0]["maxLength"] == core.MAX_IDEMPOTENCY_KEY_CHARS
    enqueue = schemas["EnqueueRequest"]["properties"]
    assert f"else {core.DEFAULT_MAX_RETRIES})" in enqueue["max_retries"]["description"]
    assert enqueue["group"]["anyOf"][0]["maxLength"] == core.MAX_GROUP_CHARS
    expires_in = enqueue["expires_in"]["anyOf"][0]
    assert expires_in["exclusiveMaximum"] == (core.EXPIRES_IN_RANGE_MS[1] + 0.5) / 1000
    assert expires_in["minimum"] == (core.EXPIRES_IN_RANGE_MS[0] - 0.5) / 1000
    retry_in = schemas["FailRequest"]["properties"]["retry_in"]["anyOf"][0]
    assert retry_in["exclusiveMaximum"] == (core.RETRY_IN_RANGE_MS[1] + 0.5) / 1000
    assert schemas["QueueSettings"]["properties"]["on_expiry"]["enum"] == list(core.ON_EXPIRY)
    multiplier = schemas["SettingsRequest"]["properties"]["backoff"]["anyOf"][0]["properties"][
        "multiplier"
    ]["anyOf"][0]
    assert (multiplier["minimum"], multiplier["maximum"]) == core.BACKOFF_MULTIPLIER_RANGE
    assert schemas["EnqueueBatchRequest"]["properties"]["items"]["maxItems"] == core.MAX_BATCH
    lease = schemas["ClaimRequest"]["properties"]["lease"]["anyOf"][0]
    assert lease["exclusiveMaximum"] == (core.LEASE_RANGE_MS[1] + 0.5) / 1000
    params = {p["name"]: p for p in doc["paths"]["/queues/{queue}/messages"]["get"]["parameters"]
              if "name" in p}
    assert params["status"]["schema"]["enum"] == list(core.STATUSES)
    limit = params["limit"]["schema"]
    assert (limit["minimum"], limit["maximum"]) == core.LIST_LIMIT_RANGE
    members = schemas["Problem"]["properties"]
    assert members["message_status"]["enum"] == [*core.STATUSES, None]
    assert set(schemas["PurgeRequest"]["properties"]["status"]["enum"]) <= set(core.STATUSES)


def test_metrics_and_the_cli_show_the_cores_names_and_limits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _metrics.STATUSES is core.STATUSES
    with pytest.raises(SystemExit):
        cli.main(["list", "--help"], out=io.StringIO(), err=io.StringIO())
    help = " ".join(capsys.readouterr().out.split())
    low, high = core.LIST_LIMIT_RANGE
    assert f"at most this many ({low}..{high}; default {core.DEFAULT_LIST_LIMIT})" in help
    assert ", ".join(core.STATUSES[:-1]) + f" or {core.STATUSES[-1]}" in help


def test_no_file_of_the_package_retypes_the_status_names() -> None:
    """Status names listed in the package's sources: only in the stub (for the type checker) and
    the finished statuses that purge takes (``"succeeded", "dead"``: the core exports no list of
    them). The dashboard gets them from ``/openapi.json`` and may name only ``dead`` (its subject);
    the Python modules get them from the native module."""
    name = r"""["'](?:pending|processing|succeeded|dead)["']"""
    listed = re.compile(rf"{name}\s*,\s*{name}")
    finished = re.compile(r"""["']succeeded["'], ["']dead["']""")
    for path in sorted(PACKAGE.rglob("*")):
        if path.suffix not in (".py", ".js", ".html"):
            continue
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(PACKAGE)
        assert [m.group() for m in listed.finditer(finished.sub("", text))] == [], where
        if path.suffix != ".py":
            assert re.findall(r"pending|processing|succeeded", text) == [], where
