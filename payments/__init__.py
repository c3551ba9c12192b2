"""Sales straight from the payment provider: Stripe and Shopify connectors (docs/payments.md)."""
