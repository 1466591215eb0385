"""Every input class answered with a clear 4xx, decided in one place each: the body limit
(413), JSON depth (400 too_deep) and strings PostgreSQL cannot store (400 invalid_string
naming the field) — in bodies, keys, query parameters, path parts, multipart and imports."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from kb.inputs import TooDeep, UnstorableString, check_json
from kb.models import Entry, Job
from kb.services.bulk import parse_lines

pytestmark = pytest.mark.django_db

LONE = "\ud800"


def url(bank, *parts):
    return "/api/v1/banks/" + "/".join([bank, *parts])


def learning(**extra):
    body = {"title": "Retry with idempotency keys", "content": "Keys stop double charges."}
    body["lifetime"] = {"durable": True}
    body.update(extra)
    return body


def post_raw(client, path, text: str, content_type="application/json"):
    return client.generic("POST", path, text.encode("utf-8", "surrogatepass"), content_type)


def error(response, status, code):
    assert response.status_code == status, response.content[:500]
    body = response.json()["error"]
    assert body["code"] == code, body
    assert body["message"]
    return body


# --- the rule itself ---------------------------------------------------------------------------


def test_the_rule_names_the_path_of_the_bad_string():
    with pytest.raises(UnstorableString) as caught:
        check_json({"metadata": {"notes": ["fine", "bad\x00"]}})
    assert list(caught.value.fields) == ["metadata.notes[1]"]
    with pytest.raises(UnstorableString) as caught:
        check_json({"metadata": {f"k{LONE}": 1}})
    assert list(caught.value.fields) == ["metadata.k\\ud800 (key)"]
    check_json({"title": "ünïcode ✓ 𝄞", "n": [1, 2.5, None, True]})  # storable: no error


def test_depth_is_checked_without_recursion():
    deep = current = {}
    for _ in range(100_000):
        current["a"] = {}
        current = current["a"]
    with pytest.raises(TooDeep):
        check_json(deep, max_depth=32)


# --- bodies ------------------------------------------------------------------------------------


def test_a_body_over_the_limit_is_413_in_the_envelope(client_rw, settings):
    settings.KB_MAX_BODY_BYTES = 10_000
    response = client_rw.post(url("acme", "entries"), learning(content="x" * 20_000), format="json")
    err = error(response, 413, "body_too_large")
    assert "10000" in err["message"]
    assert Entry.objects.count() == 0


def test_a_body_over_djangos_own_limit_is_never_a_500(client_rw):
    """Default settings: 3 MB is past Django's DATA_UPLOAD_MAX_MEMORY_SIZE of old (2.5 MB)."""
    response = client_rw.post(url("acme", "query"), {"query": "q" * 3_000_000}, format="json")
    error(response, 413, "body_too_large")


def test_a_body_without_a_declared_length_is_cut_at_the_limit(client_rw, settings):
    settings.KB_MAX_BODY_BYTES = 1_000
    body = json.dumps(learning(content="y" * 5_000)).encode()
    response = client_rw.generic(
        "POST", url("acme", "entries"), body, "application/json", CONTENT_LENGTH=""
    )
    # The test client always declares a length; without one the parser's bounded read decides.
    assert response.status_code in (413, 400), response.content


def test_json_nested_a_thousand_levels_is_400(client_rw):
    text = '{"query": "x", "kinds": ' + "[" * 1000 + "]" * 1000 + "}"
    error(post_raw(client_rw, url("acme", "query"), text), 400, "too_deep")


def test_json_nested_beyond_the_parser_is_400(client_rw):
    text = "[" * 200_000 + "]" * 200_000
    error(post_raw(client_rw, url("acme", "query"), text), 400, "too_deep")


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [
        ("title", f"bad {LONE} title", "title"),
        ("content", "nul \x00 inside", "content"),
        ("metadata", {"source": f"x{LONE}"}, "metadata.source"),
        ("metadata", {f"key{LONE}": "v"}, "metadata.key\\ud800 (key)"),
        ("systems", ["ok", "bad\x00"], "systems[1]"),
        ("anchors", {"files": [f"src/{LONE}.ts"]}, "anchors.files[0]"),
    ],
)
def test_unstorable_strings_in_a_learning_are_400_naming_the_field(client_rw, field, value, path):
    text = json.dumps(learning(**{field: value}))  # \\ud800 and \\u0000 as JSON escapes
    err = error(post_raw(client_rw, url("acme", "entries"), text), 400, "invalid_string")
    assert list(err["fields"]) == [path]
    assert Entry.objects.count() == 0


def test_unstorable_strings_in_other_bodies(client_rw, make_entry, hashing_embedder):
    a, b = make_entry("A"), make_entry("B")
    cases = [
        ("edges", {"from": a.short_id, "to": b.short_id, "relation": "cites", "note": LONE}),
        ("merges", {"keep": a.short_id, "away": b.short_id, "reason": f"r{LONE}"}),
        ("traverse", {"start": LONE, "relations": ["cites"]}),
        ("recall/anchors", {"files": [f"f{LONE}"]}),
        ("query", {"query": f"q{LONE}"}),
    ]
    for path, body in cases:
        error(post_raw(client_rw, url("acme", path), json.dumps(body)), 400, "invalid_string")


# --- query parameters and path parts ------------------------------------------------------------


def test_nul_in_query_parameters_and_path_parts_is_400(client_rw, make_entry, hashing_embedder):
    make_entry("A")
    err = error(client_rw.get(url("acme", "resolve") + "?q=a%00b"), 400, "invalid_string")
    assert list(err["fields"]) == ["q"]
    err = error(client_rw.get(url("acme", "entries", "ab%00cd")), 400, "invalid_string")
    assert list(err["fields"]) == ["entry_id"]
    error(client_rw.get(url("acme", "stale") + "?x%00=1"), 400, "invalid_string")


def test_a_broken_utf8_query_parameter_is_not_a_500(client_rw):
    response = client_rw.get(url("acme", "resolve") + "?q=%ED%A0%80")
    assert response.status_code == 200, response.content  # decoded as U+FFFD, a storable string


# --- imports -----------------------------------------------------------------------------------


def test_import_lines_with_unstorable_strings_are_reported_by_line():
    lines = "\n".join(
        [
            json.dumps({"type": "entry", "title": "ok", "lifetime": {"durable": True}}),
            json.dumps({"type": "entry", "title": f"bad{LONE}"}),
            json.dumps({"type": "entry", "title": "x", "metadata": {"k\x00": 1}}),
            "[" * 5000 + "]" * 5000,
        ]
    )
    objects, errors = parse_lines(lines)
    assert [o[0] for o in objects] == [1]
    assert [(e["line"], e["code"]) for e in errors] == [
        (2, "invalid_string"),
        (3, "invalid_string"),
        (4, "too_deep"),
    ]


def test_import_api_refuses_unstorable_lines_and_writes_nothing(
    client_rw, bank, django_capture_on_commit_callbacks
):
    good = json.dumps({"type": "entry", "title": "fine", "lifetime": {"durable": True}})
    bad = json.dumps({"type": "entry", "title": f"bad{LONE}", "lifetime": {"durable": True}})
    with django_capture_on_commit_callbacks(execute=True):
        response = client_rw.generic(
            "POST", url("acme", "import"), f"{good}\n{bad}\n".encode(), "application/x-ndjson"
        )
    assert response.status_code == 202, response.content
    job = Job.objects.get(public_id=response.json()["job"])
    assert job.status == "failed"
    assert [e["line"] for e in job.errors] == [2] and "surrogate" in job.errors[0]["message"]
    assert Entry.objects.filter(bank=bank).count() == 0
    # A raw NUL in the file cannot even be stored on the job: refused at once.
    raw_nul = f"{good}\n".replace("fine", "fi\x00ne").encode()
    response = client_rw.generic("POST", url("acme", "import"), raw_nul, "application/x-ndjson")
    error(response, 400, "invalid_string")


def test_import_multipart_fields_are_checked(client_rw, bank):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("bank.jsonl", b"", content_type="application/x-ndjson")
    response = client_rw.post(
        url("acme", "import"), {"file": upload, "note": "a\x00b"}, format="multipart"
    )
    error(response, 400, "invalid_string")


def test_import_bank_command_refuses_unstorable_lines(tmp_path, bank):
    path = tmp_path / "bank.jsonl"
    path.write_text(json.dumps({"type": "entry", "title": "t", "content": "a\x00b"}) + "\n")
    with pytest.raises(CommandError, match="NUL"):
        call_command("import_bank", bank.slug, str(path))
    assert Entry.objects.filter(bank=bank).count() == 0


def test_a_url_or_headers_past_the_limits_are_414_and_431_in_the_envelope(client_rw, settings):
    settings.KB_MAX_URL_BYTES = 300
    settings.KB_MAX_HEADER_BYTES = 2000
    long_query = client_rw.get("/api/v1/banks/acme/resolve", {"q": "x" * 400})
    assert long_query.status_code == 414
    assert long_query.json()["error"]["code"] == "uri_too_long"
    # An unknown address under /api/ is measured too, before routing.
    long_path = client_rw.get("/api/v1/" + "p" * 400)
    assert long_path.status_code == 414
    big_headers = client_rw.get("/api/v1/banks/acme/stats", HTTP_X_PADDING="y" * 2500)
    assert big_headers.status_code == 431
    assert big_headers.json()["error"] == {
        "code": "headers_too_large",
        "message": "The request headers are larger than the limit of 2000 bytes.",
        "fields": {"headers": "At most 2000 bytes."},
    }
    # Just under both limits the request is served.
    assert client_rw.get("/api/v1/banks/acme/resolve", {"q": "x" * 200}).status_code == 200
    assert client_rw.get("/api/v1/banks/acme/stats", HTTP_X_PADDING="y" * 1500).status_code == 200


@pytest.mark.parametrize("query", ["limit=", "limit=5&limit=6", "limit=2.5"])
def test_an_integer_parameter_is_one_whole_number(client_rw, query):
    # The schema says one integer: empty, repeated or fractional values are 400, not a default.
    response = client_rw.get(f"/api/v1/banks/acme/edge-proposals?{query}")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid_input" and set(error["fields"]) == {"limit"}
