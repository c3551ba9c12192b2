"""Idempotency-Key records past their 24 hours, deleted hourly on the task engine (was `idempotency purge` in cron)."""

from procrastinate.contrib.django import app

from conversions.services import idempotency_keys_purge


@app.periodic(cron="7 * * * *")
@app.task(name="conversions.idempotency_purge", queueing_lock="conversions.idempotency_purge")
def idempotency_purge(timestamp: int) -> int:
    return idempotency_keys_purge()
