"""The HTTP API of issue 21: ordering groups, expiry and ``retry_in`` in the message bodies; a
queue's stored settings (``GET``/``PUT /queues/{q}/settings``), pause and resume; their metrics;
and the enqueue routes' queue-name pattern, checked against the queue character by character.
Exact values: a virtual clock."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import deadletter
import pytest
from deadletter.http import document
from http_client import TestClient, at, client_of, fields, pending, problem
from prometheus_client.parser import text_string_to_metric_families
from virtual_clock import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def db(clock: Clock) -> deadletter.Database:
    return deadletter.open(clock=clock, lease=30)


@pytest.fixture
def client(db: deadletter.Database, clock: Clock) -> TestClient:
    return client_of(db, clock)


UNSET = {
    "backoff": None,
    "max_retries": None,
    "lease": None,
    "expires_in": None,
    "on_expiry": "dead",
    "paused": False,
}


def test_a_group_s_messages_are_claimed_one_at_a_time_in_order(client: TestClient) -> None:
    for payload in ("a1", "a2"):
        r = client.post("/queues/q/messages", json={"payload": payload, "group": "acct-1"})
        assert r.status_code == 201 and r.json()["group"] == "acct-1"
    client.post("/queues/q/messages", json={"payload": "b1", "group": "acct-2"})
    batch = client.post(
        "/queues/q/messages:batch", json={"items": [{"payload": "a3", "group": "acct-1"}, "x"]}
    )
    assert [m["group"] for m in batch.json()["messages"]] == ["acct-1", None]
    first = client.post("/queues/q/claim").json()
    second = client.post("/queues/q/claim").json()
    third = client.post("/queues/q/claim").json()
    assert [first["payload"], second["payload"], third["payload"]] == ["a1", "b1", "x"]
    assert client.post("/queues/q/claim").status_code == 204  # a2 waits behind a1
    body = {"lease_token": first["lease_token"]}
    assert client.post(f"/queues/q/messages/{first['id']}/succeed", json=body).status_code == 200
    assert client.post("/queues/q/claim").json()["payload"] == "a2"


def test_expiry_and_its_outcome(client: TestClient, clock: Clock) -> None:
    r = client.post("/queues/q/messages", json={"payload": "p", "expires_in": 60})
    assert r.json() == pending(1, "q", "p", expires_at=at(60))
    clock.advance(60)
    assert client.post("/queues/q/claim").status_code == 204
    dead = client.get("/queues/q/messages/1").json()
    assert (dead["status"], dead["last_error"], dead["dead_at"]) == ("dead", "expired", at(60))
    replayed = client.post("/queues/q/messages/1/replay", json={"expires_in": 5}).json()
    assert (replayed["status"], replayed["expires_at"]) == ("pending", at(65))
    stats = client.get("/queues/q/stats").json()
    assert (stats["expired_dead"], stats["expired_discarded"]) == (1, 0)
    problem(
        client.post("/queues/q/messages", json={"payload": "p", "expires_in": 0}),
        422,
        "validation_failed",
    )


def test_fail_with_retry_in(client: TestClient, clock: Clock) -> None:
    client.post("/queues/q/messages", json={"payload": "p"})
    m = client.post("/queues/q/claim").json()
    failed = client.post(
        "/queues/q/messages/1/fail",
        json={"error": "429", "lease_token": m["lease_token"], "retry_in": 90},
    ).json()
    assert (failed["status"], failed["retry_after"]) == ("pending", at(90))
    m = client.post("/queues/q/messages", json={"payload": "r"}).json()
    clock.advance(90)
    claimed = client.post("/queues/q/claim").json()
    body = problem(
        client.post(
            f"/queues/q/messages/{claimed['id']}/fail", json={"error": "x", "retry_in": -1}
        ),
        422,
        "validation_failed",
    )
    assert fields(body) == [("retry_in", "out_of_range")]


def test_settings_are_read_replaced_and_used(client: TestClient, clock: Clock) -> None:
    assert client.get("/queues/q/settings").json() == UNSET
    body = {
        "backoff": {"initial": 10, "multiplier": 3},
        "max_retries": 5,
        "lease": 120,
        "expires_in": 3600,
        "on_expiry": "discard",
    }
    r = client.put("/queues/q/settings?create=true", json=body)  # a new queue
    assert r.status_code == 200
    stored = {
        "backoff": {"initial": 10.0, "multiplier": 3.0, "cap": 3600.0, "jitter": None},
        "max_retries": 5,
        "lease": 120.0,
        "expires_in": 3600.0,
        "on_expiry": "discard",
        "paused": False,
    }
    assert r.json() == stored
    assert client.get("/queues/q/settings").json() == stored
    m = client.post("/queues/q/messages", json={"payload": "p"}).json()
    assert (m["max_retries"], m["expires_at"]) == (5, at(3600))
    claimed = client.post("/queues/q/claim").json()
    assert claimed["lease_expires_at"] == at(120)
    failed = client.post(
        "/queues/q/messages/1/fail", json={"error": "x", "lease_token": claimed["lease_token"]}
    ).json()
    assert failed["retry_after"] == at(10)  # the stored backoff's first delay
    # Replaces all five: omitted ones are unset.
    assert client.put("/queues/q/settings", json={"max_retries": 2}).json() == {
        **UNSET,
        "max_retries": 2,
    }
    assert [q["queue"] for q in client.get("/queues").json()["queues"]] == ["q"]


def test_settings_refuse_every_bad_field_and_unknown_ones(client: TestClient) -> None:
    body = problem(
        client.put(
            "/queues/q/settings?create=true",
            json={
                "backoff": {"multiplier": 0.5, "jitter": "some"},
                "max_retries": 0,
                "lease": 0,
                "expires_in": -1,
                "on_expiry": "keep",
            },
        ),
        422,
        "validation_failed",
    )
    assert sorted(fields(body)) == [
        ("expires_in", "out_of_range"),
        ("jitter", "invalid"),
        ("lease", "out_of_range"),
        ("max_retries", "out_of_range"),
        ("multiplier", "out_of_range"),
        ("on_expiry", "invalid"),
    ]
    settings = "/queues/q/settings?create=true"
    body = problem(client.put(settings, json={"backoff": {"factor": 2}}), 422, "validation_failed")
    assert fields(body) == [("factor", "unknown")]
    body = problem(client.put(settings, json={"paused": True}), 422, "validation_failed")
    assert fields(body) == [("paused", "unknown")]
    assert client.get("/queues/q/settings").json() == UNSET
    assert client.get("/queues").json()["queues"] == []  # nothing stored


def test_pause_and_resume(client: TestClient) -> None:
    client.post("/queues/q/messages", json={"payload": "p"})
    paused = client.post("/queues/q/pause")
    assert paused.status_code == 200 and paused.json() == {**UNSET, "paused": True}
    assert client.post("/queues/q/pause").json()["paused"] is True  # idempotent
    r = client.post("/queues/q/claim")
    assert r.status_code == 204 and "retry-after" not in r.headers
    assert client.get("/queues/q/stats").json()["paused"] is True
    assert client.put("/queues/q/settings", json={"max_retries": 4}).json()["paused"] is True
    assert client.post("/queues/q/resume", json={}).json()["paused"] is False
    assert client.post("/queues/q/claim").status_code == 200
    assert client.post("/queues/q/pause", json={"x": 1}).status_code == 422


@pytest.mark.parametrize(
    ("method", "route", "body"),
    [("POST", "pause", None), ("PUT", "settings", {"max_retries": 5})],
)
def test_pause_and_settings_of_a_queue_that_names_none_are_404_unless_create(
    client: TestClient, db: deadletter.Database, method: str, route: str, body: object
) -> None:
    """Session 8: the console's Pause on a mistyped name (and a PUT of its settings) stored a new
    queue while the real one ran on. A name `Database.queues` does not list is a 404 naming the
    queues there are, closest first, and nothing is stored, unless ``create=true``."""
    client.post("/queues/orders/messages", json={"payload": "p"})
    client.post("/queues/invoices/messages", json={"payload": "p"})
    r = client.request(method, f"/queues/ordres/{route}", json=body)
    assert problem(r, 404, "not_found") == {
        "type": "urn:deadletter:problem:not-found",
        "title": "Not found",
        "status": 404,
        "detail": 'no queue "ordres" (it holds no message and no settings); queues: "orders", '
        '"invoices"; give create=true to create it',
        "code": "not_found",
        "queue": "ordres",
    }
    assert [s.queue for s in db.queues()] == ["invoices", "orders"]  # nothing stored
    assert db.queue("ordres").settings().paused is False
    for create in ("yes", "1", ""):
        r = client.request(method, f"/queues/ordres/{route}?create={create}", json=body)
        assert fields(problem(r, 422, "validation_failed")) == [("create", "type")]
    r = client.request(method, f"/queues/ordres/{route}?create=false", json=body)
    assert r.status_code == 404
    assert [s.queue for s in db.queues()] == ["invoices", "orders"]
    r = client.request(method, f"/queues/ordres/{route}?create=true", json=body)
    assert r.status_code == 200
    assert [s.queue for s in db.queues()] == ["invoices", "orders", "ordres"]
    stored = db.queue("ordres").settings()
    assert (stored.paused, stored.max_retries) == ((True, None) if route == "pause" else (False, 5))
    # A queue that exists (a message, or now stored settings) needs no create.
    assert client.request(method, f"/queues/ordres/{route}", json=body).status_code == 200
    assert client.request(method, f"/queues/orders/{route}", json=body).status_code == 200
    # GET settings reads an unknown queue as all unset, as its stats read as zeros; resume of
    # one is a 404 (session 10: it answered 200, as if the mistyped queue was resumed), with no
    # create to give: resuming stores nothing.
    assert client.get("/queues/nowhere/settings").json() == UNSET
    assert client.get("/queues/nowhere/stats").json()["pending"] == 0
    r = client.post("/queues/ordrs/resume")
    assert problem(r, 404, "not_found")["detail"] == (
        'no queue "ordrs" (it holds no message and no settings); queues: "orders", "ordres", '
        '"invoices"'
    )
    assert client.post("/queues/ordres/resume").json()["paused"] is False
    assert "nowhere" not in [s.queue for s in db.queues()]


def test_pause_and_settings_refuse_the_names_enqueue_refuses(
    client: TestClient, db: deadletter.Database
) -> None:
    """Session 9: ``POST /queues/%2E%2E/pause?create=true`` (and a PUT of settings) made queues
    named ``..``, U+3164 or a blank that enqueue refuses, listed by ``GET /queues`` and the
    console, which cannot open ``.`` or ``..``. They are a 422 ``invalid`` on ``queue`` now, and
    nothing is stored; GET settings still takes them (names stored before). Without
    ``create=true`` too, at once (session 10, tester T2: a 404 suggested ``create=true``, whose
    answer was this 422), with every other rejected field: ``create``'s, the body's."""
    for name in ("%2E%2E", "%2E", "%E3%85%A4", "y%E3%85%A4", "%20", "a%E2%80%A8b"):
        for create in ("?create=true", ""):
            r = client.post(f"/queues/{name}/pause{create}")
            assert fields(problem(r, 422, "validation_failed")) == [("queue", "invalid")], name
            r = client.put(f"/queues/{name}/settings{create}", json={"max_retries": 5})
            assert fields(problem(r, 422, "validation_failed")) == [("queue", "invalid")], name
        r = client.post(f"/queues/{name}/pause?create=maybe")
        assert fields(problem(r, 422, "validation_failed")) == [
            ("create", "type"),
            ("queue", "invalid"),
        ]
        r = client.put(f"/queues/{name}/settings?create=1", json={"max_retries": 0})
        assert fields(problem(r, 422, "validation_failed")) == [
            ("create", "type"),
            ("queue", "invalid"),
            ("max_retries", "out_of_range"),
        ]
        assert client.post(f"/queues/{name}/resume").status_code == 404
        assert client.get(f"/queues/{name}/settings").json()["max_retries"] is None
    assert db.queues() == [] and client.get("/queues").json() == {"queues": []}


def test_the_404_of_no_queue_escapes_invisible_characters(client: TestClient) -> None:
    r = client.post("/queues/a%E2%80%AEb/resume")
    assert problem(r, 404, "not_found")["detail"].startswith(
        'no queue "a\\u202eb" (it holds no message and no settings); the database holds no queue'
    )
    assert problem(r, 404, "not_found")["queue"] == "a\u202eb"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_metrics_of_pause_and_expiry(
    client: TestClient, db: deadletter.Database, clock: Clock
) -> None:
    client.put("/queues/gone/settings?create=true", json={"on_expiry": "discard"})
    for queue in ("q", "gone"):
        client.post(f"/queues/{queue}/messages", json={"payload": "p", "expires_in": 1})
    client.post("/queues/q/pause")
    clock.advance(1)
    client.post("/queues/gone/claim")  # takes the expired message out first
    assert client.post("/queues/q/claim").status_code == 204  # paused: leaves it in
    assert db.queue("q").reap() == 1  # reaping takes it out, also while paused
    values = samples(client.get("/metrics").text)
    assert {k: v for k, v in values.items() if k[0] == "deadletter_paused"} == {
        ("deadletter_paused", (("queue", "gone"),)): 0,
        ("deadletter_paused", (("queue", "q"),)): 1,
    }
    assert {k: v for k, v in values.items() if k[0] == "deadletter_expired_total"} == {
        ("deadletter_expired_total", (("outcome", "dead"), ("queue", "gone"))): 0,
        ("deadletter_expired_total", (("outcome", "discard"), ("queue", "gone"))): 1,
        ("deadletter_expired_total", (("outcome", "dead"), ("queue", "q"))): 1,
        ("deadletter_expired_total", (("outcome", "discard"), ("queue", "q"))): 0,
    }
    text = client.get("/metrics").text
    assert "# TYPE deadletter_expired_total counter" in text


def test_the_enqueue_routes_name_pattern_is_the_queues_rule() -> None:
    """The document's pattern of the names enqueue accepts (`NEW_QUEUE`) says what the queue
    says, for each character below U+3100 and the invisible ones above, alone, twice and between
    two characters of each kind a joiner, a variation selector or an accent depends on (session
    11: ASCII letters, ideographs, emoji, a keycap's base and U+20E3, after an emoji U+00A9 and a
    keycap)."""
    doc = document()
    schema = doc["components"]["parameters"]["new_queue"]["schema"]
    pattern = re.compile(schema["pattern"])
    q = deadletter.open()
    checked = 0
    # Below U+3100, and the invisible characters above it (Hangul fillers, variation selectors,
    # tags, the code points kept ignorable: session 8).
    above = [0x3164, 0xFEFF, 0xFFA0, 0xFFFC, 0x1D173, 0x1F600, *range(0xFE00, 0xFE10)]
    above += [*range(0xFFEF, 0xFFFD), *range(0xE0000, 0xE0200, 7), 0xE01EF, 0xE01F0, 0xE0FFF]
    for code in [*range(0x3100), *above]:
        if 0xD800 <= code <= 0xDFFF:
            continue
        c = chr(code)
        contexts = (f"a{c}b", f"\u845b{c}\u845b", f"\U0001f469{c}\U0001f4bb", f"#{c}\u20e3")
        contexts += (f"\u00a9\ufe0f{c}\u845b", f"#\ufe0f\u20e3{c}\u845b")
        for name in (c, c * 2, *contexts):
            try:
                q_ok = bool(q.queue(name).enqueue("p"))
            except deadletter.ValidationError:
                q_ok = False
            assert bool(pattern.fullmatch(name)) == q_ok, (hex(code), name)
            checked += 1
    assert checked > 90_000
    england = "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"
    names = [" a", "a ", "a\u3000", "\u00a0a", england, f"a {england} b", f" {england}"]
    names += [england[:3], england[:-1] + "b", "\U0001f3f3\U000e0067\U000e007f", "\u200d "]
    names += ["\U0001f3f4\U000e0061\U000e0062\U000e0063\U000e007f"]  # tags that are no flag
    names += [f"{england}\U000e007f", "\U0001f3f4\U000e007f", "a \u200d", ". .", "\u2764\ufe0f"]
    # Session 11 (tester T3): what joins, varies or spaces nothing, an accent; and what does.
    names += ["ema\u200dils", "ema\ufe0fils", "caf\u00e9\ufe0f", "cafe\u0301", "a\u2800b"]
    names += ["\U0001f469\u200d\ufe0f", "\u2764\ufe0f\ufe0f", "a\u00a0b", "1\ufe0f", "E\u0300"]
    names += ["\U0001f469\u200d\U0001f4bb", "\u2764\ufe0f\u200d\U0001f525", "*\ufe0f\u20e3 x"]
    names += ["\u00a9\ufe0f\u200d\U0001f525", "\u0915\u094d\u200c\u0937", f"{england}\u200d\u2764"]
    names += ["\U0001f441\ufe0f\u200d\U0001f5e8\ufe0f", "\u00e9\u200d\u00e9", "\u0301x"]
    names += ["\u00a9" * 200 + "\u200d", "\u845b\ufe0f" * 100 + "\u200d"]  # no backtracking blow-up
    for name in names:
        try:
            q_ok = bool(q.queue(name).enqueue("p"))
        except deadletter.ValidationError:
            q_ok = False
        assert bool(pattern.fullmatch(name)) == q_ok, ascii(name)
    new = [("/queues/{queue}/messages", "post"), ("/queues/{queue}/messages:batch", "post")]
    for path, method in new:
        parameters = doc["paths"][path][method]["parameters"]
        assert {"$ref": "#/components/parameters/new_queue"} in parameters
    # Pausing and storing settings take an existing queue's name, also one no new queue takes
    # (session 10): the enqueue's pattern applies only when they make the queue (create=true).
    existing = [("/queues/{queue}/resume", "post"), ("/queues/{queue}/settings", "get")]
    existing += [("/queues/{queue}/pause", "post"), ("/queues/{queue}/settings", "put")]
    for path, method in existing:
        parameters = doc["paths"][path][method]["parameters"]
        assert {"$ref": "#/components/parameters/queue"} in parameters


def test_a_queue_stored_under_a_name_no_new_queue_takes_is_paused_and_moved_out(
    tmp_path: Path, clock: Clock
) -> None:
    """Session 10 (tester T2): ``emails `` (white space at its end), stored by 0.1.0 with a
    message, is paused over HTTP while its message is moved out, and its settings are stored; a
    new queue under such a name is still a 422 (the message's queue rewritten raw, as 0.1.0
    could store it)."""
    path = tmp_path / "old.db"
    with deadletter.open(path, clock=clock) as db:
        db.queue("emails").enqueue("hello")
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE messages SET queue = 'emails '")
    conn.close()
    with deadletter.open(path, clock=clock) as db:
        client = client_of(db, clock)
        paused = client.post("/queues/emails%20/pause")
        assert (paused.status_code, paused.json()["paused"]) == (200, True)
        stored = client.put("/queues/emails%20/settings", json={"max_retries": 4})
        assert (stored.status_code, stored.json()["max_retries"]) == (200, 4)
        assert client.post("/queues/emails%20/claim").status_code == 204
        moved = client.post("/queues/emails%20/move", json={"to_queue": "emails"})
        assert (moved.status_code, moved.json()["count"]) == (200, 1)
        assert client.post("/queues/emails%20/resume").json()["paused"] is False
        assert client.put("/queues/emails%20/settings", json={}).status_code == 200
        assert [q["queue"] for q in client.get("/queues").json()["queues"]] == ["emails"]
        refused = client.post("/queues/emails%20/pause?create=true")
        assert refused.status_code == 422
        assert ("queue", "invalid") in fields(refused.json())


def test_a_refused_new_name_with_create_is_one_422_listing_every_field(client: TestClient) -> None:
    """Session 10, tester T3: with ``create=true`` the body's errors came first and the name's
    in a second 422, once the body was fixed."""
    r = client.put("/queues/x%E2%80%8D/settings?create=true", json={"max_retries": 0, "lease": "a"})
    assert r.status_code == 422
    rejected = [("lease", "type"), ("max_retries", "out_of_range"), ("queue", "invalid")]
    assert sorted(fields(r.json())) == rejected
    r = client.post("/queues/x%E2%80%8D/pause?create=true")
    assert (r.status_code, fields(r.json())) == (422, [("queue", "invalid")])
    assert client.get("/queues").json()["queues"] == []


def test_a_bad_body_for_a_queue_not_there_is_a_422_before_the_404(
    client: TestClient, db: deadletter.Database
) -> None:
    """Session 11, tester T3: a PUT of bad settings under an unknown, valid name was a 404, and
    the body's 422 came only once the queue was made; a client fixing its request sees the
    request's faults first, in one 422 (as apps validate a body before they look anything up),
    and the 404 once the request is right. Nothing is stored."""
    db.queue("orders").enqueue("x")
    settings = "/queues/ordres/settings"
    r = client.put(settings, json={"max_retries": 0, "lease": "a"})
    rejected = [("max_retries", "out_of_range"), ("lease", "type")]
    assert fields(problem(r, 422, "validation_failed")) == rejected
    r = client.put(settings + "?create=maybe", json={"max_retries": 0, "lease": "a"})
    assert fields(problem(r, 422, "validation_failed")) == [("create", "type"), *rejected]
    r = client.put(settings + "?create=false", json={"backoff": {"initial": -1}})
    assert fields(problem(r, 422, "validation_failed")) == [("initial", "out_of_range")]
    r = client.put(settings, json={"max_retries": 5})
    assert problem(r, 404, "not_found")["queue"] == "ordres"
    described = document()["paths"]["/queues/{queue}/settings"]["put"]["description"]
    assert "The body is checked first: a bad one is a 422 listing every rejected field" in described
    r = client.post("/queues/ordres/pause", json={"paused": True})
    assert fields(problem(r, 422, "validation_failed")) == [("paused", "unknown")]
    assert [s.queue for s in db.queues()] == ["orders"]
    r = client.put(settings + "?create=true", json={"max_retries": 0})
    assert fields(problem(r, 422, "validation_failed")) == [("max_retries", "out_of_range")]
    assert [s.queue for s in db.queues()] == ["orders"]


def test_a_second_resume_of_a_queue_the_first_one_emptied_is_a_404(
    client: TestClient, db: deadletter.Database
) -> None:
    """Session 11, tester T3: resuming a queue that holds no message and no other setting deletes
    its row (every setting back to its default), and then nothing tells it from a typo: a second
    resume is the 404 of a name that names no queue, as the CLI's ``resume`` refuses it (the
    document says so). A queue that holds a message is resumed again and again."""
    assert client.post("/queues/idle/pause?create=true").json()["paused"] is True
    assert client.post("/queues/idle/resume").json() == UNSET
    assert db.queues() == []
    assert problem(client.post("/queues/idle/resume"), 404, "not_found")["queue"] == "idle"
    db.queue("busy").enqueue("x")
    for _ in range(2):
        assert client.post("/queues/busy/resume").json() == UNSET
    assert db.queue("idle").resume().paused is False  # the Python API takes any name
    described = document()["paths"]["/queues/{queue}/resume"]["post"]["description"]
    assert "So is a second resume of a queue that held no message and no other setting" in described


def test_a_404_shows_names_that_read_alike_apart(
    client: TestClient, db: deadletter.Database
) -> None:
    """Session 10, tester T3: the 404's detail showed ``"emails\u2800"`` and ``"emails "`` (0.1.0's
    names) as typed, which read alike; their ends are escaped as in the CLI's tables."""
    db.queue("emails").enqueue("x")
    detail = problem(client.post("/queues/emails%E2%A0%80/resume"), 404, "not_found")["detail"]
    why = 'no queue "emails\\u2800" (it holds no message and no settings); queues: "emails"'
    assert detail.startswith(why)
