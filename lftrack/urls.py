"""URL map: the tracked-link redirect, the v1 API router, health and the admin."""
from django.contrib import admin
from django.urls import include, path
from rest_framework.routers import SimpleRouter

from campaigns.api import CampaignLeadViewSet
from clicks.views import follow_link
from conversions.api import ConversionViewSet
from lftrack.views import healthz

router = SimpleRouter(trailing_slash=False)
router.register("conversions", ConversionViewSet, basename="conversion")
# Any slug reaches the view, dots included, so an unknown one is "unknown campaign", not "not found".
router.register(r"campaigns/(?P<slug>[^/]+)/leads", CampaignLeadViewSet, basename="campaign-lead")

urlpatterns = [
    path("l/<str:key>", follow_link, name="follow-link"),
    path("healthz", healthz, name="healthz"),
    path("api/v1/", include(router.urls)),
    path("admin/", admin.site.urls),
]

handler400 = "lftrack.errors.handler400"
handler403 = "lftrack.errors.handler403"
handler404 = "lftrack.errors.handler404"
handler500 = "lftrack.errors.handler500"
