"""Write pgbench scripts that run exactly the SQL a conversion request runs (bench/conversions.sh's pgbench phase).

Usage: DATABASE_URL=... python bench/conversion_sql.py SEED_FILE OUT_DIR   (after bench/seed.py wrote SEED_FILE)

The statements are not written by hand: each of the four requests bench/conversions.lua sends (a sale or
a lead, for a new person or a seeded one) is sent once through lftrack's WSGI application in this
process, and every statement it runs on PostgreSQL is recorded with its parameters and whether it ran
inside a transaction. Each request becomes one pgbench script (OUT_DIR/<kind>.sql): the same statements
in the same transactions, with the values that vary per request drawn by pgbench: the click (a random
seeded click, looked up by id in the statement that names it), the new person (a random number in
their email, external id and name) and the seeded person; every other value is the recorded one, as a
literal. So the scripts follow the code when it changes (a new statement, a new column), and pgbench
does slightly more than the application (the click's id lookup) rather than less. Prints the number
of statements and transactions per request kind.
"""

import io
import json
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lftrack.settings")
os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1")

import django

django.setup()

from django.db import connection  # noqa: E402
from psycopg import sql  # noqa: E402

from clicks.models import Click  # noqa: E402
from lftrack.wsgi import application  # noqa: E402

NEW_TAG = "918273645546"  # the new person's number in the recorded request; pgbench draws :person
SEEDED = 4321  # the seeded person in the recorded request; pgbench draws :seeded


def request_body(kind: str, click_id: str) -> dict:
    """What bench/conversions.lua sends for `kind` (new_sale, new_lead, seeded_sale, seeded_lead)."""
    if kind.startswith("new"):
        customer = {"email": f"new-{NEW_TAG}@example.com", "external_id": f"ext-{NEW_TAG}", "name": f"New {NEW_TAG}"}
    else:
        customer = {"email": f"Seeded-{SEEDED}@Example.com", "name": "Someone else"}
    if kind.endswith("sale"):
        return {
            "event": "sale",
            "click_id": click_id,
            "value_cents": 1042,
            "event_name": "Annual plan",
            "customer": customer,
            "meta": {"order": "pgbench"},
        }
    return {"event": "lead", "click_id": click_id, "event_name": "Signup", "customer": customer}


def post(token: str, body: dict) -> int:
    payload = json.dumps(body).encode()
    status = []
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/api/v1/conversions",
        "QUERY_STRING": "",
        "SCRIPT_NAME": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(payload)),
        "HTTP_AUTHORIZATION": f"Bearer {token}",
        "wsgi.input": io.BytesIO(payload),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
    }
    response = application(environ, lambda s, headers, exc_info=None: status.append(int(s.split()[0])))
    b"".join(response)
    response.close()
    return status[0]


def recorded(token: str, body: dict) -> list[tuple[str, object, bool]]:
    """(sql, params, in a transaction) of every statement the request ran."""
    statements = []

    def record(execute, query, params, many, context):
        statements.append((query, params, connection.in_atomic_block))
        return execute(query, params, many, context)

    with connection.execute_wrapper(record):
        status = post(token, body)
    if status != 201:
        raise SystemExit(f"conversion_sql: the recorded request answered {status}")
    return statements


def literal(value, click_id: str) -> str:
    """A recorded parameter as SQL: pgbench's variables where the request varies, the value otherwise."""
    if isinstance(value, str):
        if value == click_id:
            return f"(SELECT click_id FROM {Click._meta.db_table} WHERE id = :click)"
        for tag, variable in ((NEW_TAG, ":person"), (str(SEEDED), ":seeded")):
            if tag in value:
                before, after = value.split(tag, 1)
                return f"({_quoted(before)} || {variable}::text || {_quoted(after)})"
    return sql.Literal(value).as_string(connection.connection)


def _quoted(text: str) -> str:
    return sql.Literal(text).as_string(connection.connection) + "::text"


def statement(query: str, params, click_id: str) -> str:
    if isinstance(params, dict):
        text = re.sub(r"%\((\w+)\)s", lambda m: literal(params[m.group(1)], click_id), query)
    else:
        values = iter(params or ())
        text = re.sub(r"%s", lambda m: literal(next(values), click_id), query)
    return " ".join(text.replace("%%", "%").split()) + ";"


def script(statements, click_id: str, first_click: int, last_click: int, customers: int) -> tuple[str, int]:
    lines = [
        f"\\set click random({first_click}, {last_click})",
        "\\set person random(1, 1000000000000)",
        f"\\set seeded random(1, {customers})",
    ]
    open_transaction = False
    transactions = 0
    for query, params, atomic in statements:
        if atomic and not open_transaction:
            lines.append("BEGIN;")
            transactions += 1
        elif not atomic and open_transaction:
            lines.append("COMMIT;")
        open_transaction = atomic
        lines.append(statement(query, params, click_id))
    if open_transaction:
        lines.append("COMMIT;")
    return "\n".join(lines) + "\n", transactions


def main() -> None:
    seed, out = Path(sys.argv[1]), Path(sys.argv[2])
    token, _run, customers, *click_ids = seed.read_text().split()
    # The seed's clicks, inserted in the seed file's order, are one range of ids: its ends found by click id
    # (an index scan each; by workspace, or min()/max() in SQL, PostgreSQL walks the primary key instead,
    # through 50,000,000 clicks on a grown database).
    ends = Click.objects.filter(click_id__in=[click_ids[0], click_ids[-1]]).values_list("id", flat=True)
    first_click, last_click = min(ends), max(ends)
    for _ in range(2):  # warm: the token's last-used time and its copy in this process, the connection
        post(token, request_body("seeded_lead", click_ids[-1]))
    out.mkdir(parents=True, exist_ok=True)
    for n, kind in enumerate(("new_sale", "seeded_lead", "new_lead", "seeded_sale")):
        click_id = click_ids[n]
        statements = recorded(token, request_body(kind, click_id))
        text, transactions = script(statements, click_id, first_click, last_click, int(customers))
        (out / f"{kind}.sql").write_text(text)
        print(f"conversion_sql: {kind}: {len(statements)} statements, {transactions} transaction(s)")


if __name__ == "__main__":
    main()
