"""Seed the benchmark database: a workspace, a token, clicks and customers; write what wrk needs.

Usage: python bench/seed.py OUTFILE [CLICKS] [CUSTOMERS]  (DATABASE_URL names the benchmark database)
OUTFILE gets the token, a run id, the number of seeded customers, then one click id per line.
"""

import os
import secrets
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lftrack.settings")

import django

django.setup()

from django.db import transaction  # noqa: E402

from campaigns.services import campaign_create, campaign_email_add  # noqa: E402
from clicks.links import link_add  # noqa: E402
from clicks.models import Click  # noqa: E402
from customers.models import Customer  # noqa: E402
from webhooks.events import EVENT_TYPES  # noqa: E402
from webhooks.models import Endpoint  # noqa: E402
from webhooks.secrets import secret_new, secret_seal  # noqa: E402
from workspaces.services import workspace_create  # noqa: E402
from workspaces.tokens import api_token_create  # noqa: E402


def webhook_endpoint(workspace) -> None:
    """With BENCH_WEBHOOK=1: an endpoint wanting every event but clicks, so each conversion writes its events
    and queues their deliveries (no worker runs: the jobs wait). The outbox's cost when it is used."""
    if os.environ.get("BENCH_WEBHOOK"):
        Endpoint.objects.create(
            workspace=workspace,
            url="https://hooks.example.com/bench",
            secret=secret_seal(secret_new()),
            event_types=[event_type for event_type in EVENT_TYPES if event_type != "click.created"],
        )


def main() -> None:
    out = Path(sys.argv[1])
    clicks = int(sys.argv[2]) if len(sys.argv) > 2 else 20_000
    customers = int(sys.argv[3]) if len(sys.argv) > 3 else 5_000
    with transaction.atomic():
        # A fresh workspace per run, so runs can share a database (BENCH_REUSE_DB, the growth runs).
        workspace = workspace_create(slug=f"bench-{secrets.token_hex(4)}", name="Benchmark")
        token = api_token_create(workspace=workspace, name="bench").secret
        webhook_endpoint(workspace)
        link = link_add(workspace=workspace, destination="https://shop.example.com/pricing", post_title="Bench")
        rows = Click.objects.bulk_create(
            [Click(workspace=workspace, link=link) for _ in range(clicks)], batch_size=5_000
        )
        # For BENCH_ENDPOINT=campaign_leads: a live one-step sequence, so every enrollment is scheduled.
        campaign = campaign_create(workspace=workspace, slug="bench", name="Benchmark")
        campaign_email_add(campaign=campaign, subject="Hi {{ name }}", body="Welcome.", delay_minutes=60)
        Customer.objects.bulk_create(
            [
                Customer(workspace=workspace, email=f"seeded-{i}@example.com", name=f"Seeded {i}", source="api")
                for i in range(1, customers + 1)
            ],
            batch_size=5_000,
        )
    lines = [token, secrets.token_hex(4), str(customers), *(row.click_id for row in rows)]
    out.write_text("\n".join(lines) + "\n")
    print(f"seeded {clicks} clicks and {customers} customers")


if __name__ == "__main__":
    main()
