"""URL map: the tracked-link redirect, unsubscribe links, the pixel's script, the v1 API router and its OpenAPI, health, the admin and the demo."""

from django.contrib import admin
from django.urls import include, path
from rest_framework.routers import SimpleRouter

from campaigns.api import CampaignEnrollmentViewSet, CampaignLeadViewSet, EmailEventViewSet
from campaigns.views import confirm, provider_hook, unsubscribe
from clicks.views import follow_link
from conversions.api import ConversionViewSet
from conversions.customers_api import CustomerViewSet
from conversions.demo import demo_landing, demo_thanks
from conversions.pixel_api import BrowserConversionViewSet
from conversions.refunds_api import RefundViewSet
from conversions.views import pixel_script
from customers.tags_api import CustomerTagViewSet
from lftrack.openapi import OpenApiView
from lftrack.views import healthz, home, readyz
from payments.views import payment_hook
from rollups.api import AnalyticsViewSet
from rollups.links_api import LinkViewSet
from webhooks.api import WebhookEndpointViewSet
from workspaces.views import invitation

router = SimpleRouter(trailing_slash=False)
router.register("conversions", ConversionViewSet, basename="conversion")
router.register("browser/conversions", BrowserConversionViewSet, basename="browser-conversion")
router.register(r"conversions/(?P<conversion_id>[^/]+)/refunds", RefundViewSet, basename="refund")
# Any slug reaches the view, dots included, so an unknown one is "unknown campaign", not "not found".
router.register(r"campaigns/(?P<slug>[^/]+)/leads", CampaignLeadViewSet, basename="campaign-lead")
router.register(r"campaigns/(?P<slug>[^/]+)/enrollments", CampaignEnrollmentViewSet, basename="campaign-enrollment")
router.register("email-events", EmailEventViewSet, basename="email-event")
router.register("customers", CustomerViewSet, basename="customer")
router.register(r"customers/(?P<customer_id>[^/]+)/tags", CustomerTagViewSet, basename="customer-tag")
router.register("analytics", AnalyticsViewSet, basename="analytics")
router.register("webhooks", WebhookEndpointViewSet, basename="webhook")
router.register("links", LinkViewSet, basename="link")

urlpatterns = [
    path("l/<slug:key>", follow_link, name="follow-link"),
    # The link in every campaign email (List-Unsubscribe): GET confirms, POST (one-click, RFC 8058) unsubscribes.
    path("u/<str:token>", unsubscribe, name="unsubscribe"),
    path("c/<str:token>", confirm, name="confirm"),
    path("invite/<str:token>", invitation, name="invitation"),
    # Bounces and complaints from the email provider itself (campaigns/provider_hooks.py).
    path("hooks/email/<str:provider>", provider_hook, name="provider-hook"),
    # A payment provider's webhooks into one connection (payments/views.py).
    path("hooks/payments/<str:token>", payment_hook, name="payment-hook"),
    path("lf.js", pixel_script, name="pixel-script"),
    path("", home, name="home"),
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("api/v1/openapi.json", OpenApiView.as_view(), name="openapi"),
    path("api/v1/", include(router.urls)),
    path("admin/", admin.site.urls),
    # 404 unless DEBUG is on (conversions/demo.py).
    path("demo/landing", demo_landing, name="demo-landing"),
    path("demo/thanks", demo_thanks, name="demo-thanks"),
]

handler400 = "lftrack.errors.handler400"
handler403 = "lftrack.errors.handler403"
handler404 = "lftrack.errors.handler404"
handler500 = "lftrack.errors.handler500"
