"""What /metrics answers, read back as numbers: the tests of each metric family compare two scrapes."""

from prometheus_client.parser import text_string_to_metric_families

TOKEN = "t" * 40


def scrape(client) -> dict[tuple[str, frozenset], float]:
    """{(sample name, its labels): value} from one authorised GET /metrics (settings.METRICS_TOKEN = TOKEN)."""
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200, response.content
    return samples(response.content.decode())


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def moved(before: dict, after: dict, name: str, **labels: str) -> float:
    """How much the sample `name` with exactly `labels` moved between two scrapes."""
    key = (name, frozenset(labels.items()))
    return after.get(key, 0.0) - before.get(key, 0.0)
