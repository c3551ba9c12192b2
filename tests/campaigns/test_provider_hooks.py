"""Email providers' webhooks (/hooks/email/<provider>): each provider's recorded bounce and complaint
payloads, written after the examples in its documentation, suppress the right address, pause the campaign
of the email complained of, and change nothing when the call is not the workspace's."""

import base64
import hashlib
import hmac
import json
import secrets
import time
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from campaigns.models import Campaign, EmailSend, Enrollment, ProviderHook, Suppression
from campaigns.provider_hooks import PROVIDERS, provider_hook_create
from customers.models import CustomerActivity
from tests.factories import CampaignFactory, CustomerFactory, EmailSendFactory, EnrollmentFactory

pytestmark = pytest.mark.django_db

ADA = "ada@example.com"
MAILGUN_KEY = "key-3ax6xnjp29jd6fds4gc373sgvjxteol0"
OURS = "<177244260012.4242.9911@lftrack.example>"  # a Message-ID as campaigns/mail.py makes them


# --- Recorded payloads: (body, content type, extra headers) ---------------------------------------


def _sns(message: dict) -> tuple:
    body = {
        "Type": "Notification",
        "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
        "TopicArn": "arn:aws:sns:us-east-1:123456789012:ses-events",
        "Message": json.dumps(message),
        "Timestamp": "2026-03-02T09:10:00.000Z",
        "SignatureVersion": "1",
        "Signature": "EXAMPLEpH+DcEwjAPg8O9mY8dReBSwksfg2S7WKQcikcNKWLQjwu6A4VbeS0QHVCkhRS7fUQvi2egU3N858fiTDN6bkkOxYDVrY0Ad8L10Hs3zH81mtnPk5uvvolIC1CXGu43obcgFxeL3khZl8IKvO61GWB6jI9b5+gLPoBc1Q=",
        "SigningCertURL": "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem",
        "UnsubscribeURL": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=arn:aws:sns:us-east-1:123456789012:ses-events:1",
    }
    headers = {"HTTP_X_AMZ_SNS_MESSAGE_TYPE": "Notification", "HTTP_X_AMZ_SNS_MESSAGE_ID": body["MessageId"]}
    return body, "text/plain; charset=UTF-8", headers


def _ses_mail(message_id: str) -> dict:
    return {
        "timestamp": "2026-03-02T09:00:00.000Z",
        "messageId": "0100018e0a9b8c7d-3f1e2d4c-5b6a-4789-9abc-def012345678-000000",
        "source": "noreply@lftrack.example",
        "destination": [ADA],
        "commonHeaders": {
            "from": ["noreply@lftrack.example"],
            "to": [ADA],
            "messageId": message_id,
            "subject": "Welcome",
        },
    }


def ses_bounce(message_id: str, *, hard: bool = True) -> tuple:
    return _sns(
        {
            "notificationType": "Bounce",
            "bounce": {
                "bounceType": "Permanent" if hard else "Transient",
                "bounceSubType": "General",
                "bouncedRecipients": [
                    {
                        "emailAddress": ADA,
                        "action": "failed",
                        "status": "5.1.1",
                        "diagnosticCode": "smtp; 550 5.1.1 user unknown",
                    }
                ],
                "timestamp": "2026-03-02T09:10:00.000Z",
                "feedbackId": "0100018e0a9b8c7d-aaaa-bbbb-cccc-000000000000-000000",
            },
            "mail": _ses_mail(message_id),
        }
    )


def ses_complaint(message_id: str) -> tuple:
    return _sns(
        {
            "notificationType": "Complaint",
            "complaint": {
                "complainedRecipients": [{"emailAddress": ADA}],
                "complaintFeedbackType": "abuse",
                "timestamp": "2026-03-02T09:10:00.000Z",
                "feedbackId": "0100018e-feedback-000000",
            },
            "mail": _ses_mail(message_id),
        }
    )


def _postmark(record_type: str, kind: str) -> tuple:
    return (
        {
            "RecordType": record_type,
            "ID": 4323372036854775807,
            "Type": kind,
            "TypeCode": 1,
            "Name": kind,
            "Tag": "",
            "MessageID": "883953f4-6105-42a2-a16a-77a8eac79483",
            "ServerID": 23,
            "MessageStream": "outbound",
            "Description": "The server was unable to deliver your message (ex: unknown user, mailbox not found).",
            "Details": "smtp;550 5.1.1 The email account that you tried to reach does not exist.",
            "Email": ADA,
            "From": "noreply@lftrack.example",
            "BouncedAt": "2026-03-02T09:10:00Z",
            "DumpAvailable": True,
            "Inactive": True,
            "CanActivate": True,
            "Subject": "Welcome",
        },
        "application/json",
        {},
    )


def postmark_bounce(message_id: str, *, hard: bool = True) -> tuple:
    return _postmark("Bounce", "HardBounce" if hard else "SoftBounce")


def postmark_complaint(message_id: str) -> tuple:
    return _postmark("SpamComplaint", "SpamComplaint")


def _sendgrid(event: str, **fields) -> tuple:
    return (
        [
            {
                "email": ADA,
                "timestamp": 1772442600,
                "smtp-id": fields.pop("message_id"),
                "event": event,
                "category": [],
                "sg_event_id": "c2VuZGdyaWRfZXZlbnRfaWQ",
                "sg_message_id": "14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0",
                **fields,
            }
        ],
        "application/json",
        {},
    )


def sendgrid_bounce(message_id: str, *, hard: bool = True) -> tuple:
    return _sendgrid(
        "bounce",
        message_id=message_id,
        reason="500 unknown recipient",
        status="5.0.0",
        type="bounce" if hard else "blocked",
    )


def sendgrid_complaint(message_id: str) -> tuple:
    return _sendgrid("spamreport", message_id=message_id)


def _mailgun(event_data: dict, key: str = MAILGUN_KEY, *, age: int = 0, token: str | None = None) -> tuple:
    timestamp, token = str(int(time.time()) - age), token or secrets.token_hex(25)  # Mailgun: a fresh token a call
    signature = hmac.new(key.encode(), f"{timestamp}{token}".encode(), hashlib.sha256).hexdigest()
    body = {"signature": {"timestamp": timestamp, "token": token, "signature": signature}, "event-data": event_data}
    return body, "application/json", {}


def _mailgun_event(event: str, message_id: str, **fields) -> dict:
    return {
        "event": event,
        "id": "G9Bn5sl1TC6nu79C8C0bwg",
        "timestamp": 1772442600.12,
        "recipient": ADA,
        "message": {
            "headers": {
                "to": ADA,
                "message-id": message_id.strip("<>"),
                "from": "noreply@lftrack.example",
                "subject": "Welcome",
            },
            "size": 111,
        },
        "tags": [],
        "user-variables": {},
        **fields,
    }


def mailgun_bounce(message_id: str, *, hard: bool = True, key: str = MAILGUN_KEY) -> tuple:
    return _mailgun(
        _mailgun_event(
            "failed",
            message_id,
            severity="permanent" if hard else "temporary",
            reason="bounce",
            **{"delivery-status": {"code": 550, "message": "No such user", "description": ""}},
        ),
        key,
    )


def mailgun_complaint(message_id: str) -> tuple:
    return _mailgun(_mailgun_event("complained", message_id))


def _brevo(event: str, message_id: str) -> tuple:
    return (
        {
            "event": event,
            "email": ADA,
            "id": 1234567,
            "date": "2026-03-02 10:10:00",
            "ts": 1772442600,
            "message-id": message_id,
            "ts_event": 1772442600,
            "subject": "Welcome",
            "tag": "",
            "sending_ip": "185.41.28.109",
            "ts_epoch": 1772442600000,
            "reason": "550 5.1.1 user unknown",
        },
        "application/json",
        {},
    )


def brevo_bounce(message_id: str, *, hard: bool = True) -> tuple:
    return _brevo("hard_bounce" if hard else "soft_bounce", message_id)


def brevo_complaint(message_id: str) -> tuple:
    return _brevo("spam", message_id)


def _mailjet(event: str, **fields) -> tuple:
    return (
        {
            "event": event,
            "time": 1772442600,
            "MessageID": 19421777835146490,
            "Message_GUID": "1ab23cd4-e567-8901-2345-6789f0gh1i2j",
            "email": ADA,
            "mj_campaign_id": 7173,
            "mj_contact_id": 320,
            "customcampaign": "",
            "CustomID": "",
            "Payload": "",
            **fields,
        },
        "application/json",
        {},
    )


def mailjet_bounce(message_id: str, *, hard: bool = True) -> tuple:
    return _mailjet("bounce", blocked=False, hard_bounce=hard, error_related_to="recipient", error="user unknown")


def mailjet_complaint(message_id: str) -> tuple:
    return _mailjet("spam", source="JMRPP")


def _sparkpost(event: dict) -> tuple:
    common = {
        "raw_rcpt_to": ADA,
        "rcpt_to": ADA,
        "message_id": "0e0d94b7-9085-4e3c-ab30-e3f2cd9c273e",
        "transmission_id": "65832150921904138",
        "timestamp": "1772442600",
        "event_id": "92356927693813856",
    }
    return [{"msys": {"message_event": {**common, **event}}}], "application/json", {}


def sparkpost_bounce(message_id: str, *, hard: bool = True) -> tuple:
    return _sparkpost(
        {
            "type": "bounce",
            "bounce_class": "10" if hard else "20",
            "raw_reason": "550 5.1.1 <ada@example.com>: Recipient address rejected: User unknown",
        }
    )


def sparkpost_complaint(message_id: str) -> tuple:
    return _sparkpost({"type": "spam_complaint", "fbtype": "abuse", "report_by": "server.email.com"})


PAYLOADS = {
    "amazon_ses": (ses_bounce, ses_complaint),
    "brevo": (brevo_bounce, brevo_complaint),
    "mailgun": (mailgun_bounce, mailgun_complaint),
    "mailjet": (mailjet_bounce, mailjet_complaint),
    "postmark": (postmark_bounce, postmark_complaint),
    "sendgrid": (sendgrid_bounce, sendgrid_complaint),
    "sparkpost": (sparkpost_bounce, sparkpost_complaint),
}
# The providers whose events carry our Message-ID header, so the complaint finds the email itself.
NAMES_THE_MESSAGE = {"amazon_ses", "brevo", "mailgun", "sendgrid"}


# --- Helpers ----------------------------------------------------------------------------------------


@pytest.fixture
def secret(acme) -> str:
    return provider_hook_create(workspace=acme, signing_keys={"mailgun": MAILGUN_KEY})[1]


def call(client, provider: str, payload: tuple, *, user: str = "acme", password: str | None = None):
    body, content_type, headers = payload
    if password is not None:
        credentials = base64.b64encode(f"{user}:{password}".encode()).decode()
        headers = {**headers, "HTTP_AUTHORIZATION": f"Basic {credentials}"}
    return client.post(f"/hooks/email/{provider}", data=json.dumps(body), content_type=content_type, **headers)


def enrolled(workspace, *, campaign_slug: str) -> Enrollment:
    customer = CustomerFactory(workspace=workspace, email=ADA)  # get_or_create-like: one contact per address
    return EnrollmentFactory(campaign=CampaignFactory(workspace=workspace, slug=campaign_slug), customer=customer)


# --- Tests ------------------------------------------------------------------------------------------


def test_every_provider_has_recorded_payloads():
    assert set(PAYLOADS) == set(PROVIDERS)


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_hard_bounce_suppresses_the_address_and_a_soft_one_changes_nothing(client, acme, secret, provider):
    bounce, _ = PAYLOADS[provider]
    enrollment = EnrollmentFactory(
        campaign=CampaignFactory(workspace=acme), customer=CustomerFactory(workspace=acme, email=ADA)
    )

    soft = call(client, provider, bounce(OURS, hard=False), password=secret)
    assert soft.status_code == 200 and soft.json() == {"events": 1, "suppressed": 0}
    assert not Suppression.objects.exists()

    hard = call(client, provider, bounce(OURS), password=secret)
    assert hard.status_code == 200 and hard.json() == {"events": 1, "suppressed": 1}
    suppression = Suppression.objects.get()
    assert (suppression.workspace, suppression.email, suppression.reason) == (acme, ADA, "bounced")
    enrollment.refresh_from_db()
    assert enrollment.state == "stopped"
    assert CustomerActivity.objects.filter(customer=enrollment.customer, channel="provider").exists()

    assert call(client, provider, bounce(OURS), password=secret).status_code == 200  # the provider's retry
    assert Suppression.objects.count() == 1


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_complaint_suppresses_and_pauses_the_campaign_of_the_email_complained_of(client, acme, secret, provider):
    _, complaint = PAYLOADS[provider]
    customer = CustomerFactory(workspace=acme, email=ADA)
    older = EmailSendFactory(
        enrollment=EnrollmentFactory(campaign=CampaignFactory(workspace=acme, slug="spring"), customer=customer),
        message_id=OURS,
        sent_at=timezone.now() - timedelta(days=1),
    )
    latest = EmailSendFactory(
        enrollment=EnrollmentFactory(campaign=CampaignFactory(workspace=acme, slug="autumn"), customer=customer),
        message_id="<177244260099.4242.1234@lftrack.example>",
        sent_at=timezone.now(),
    )

    response = call(client, provider, complaint(OURS), password=secret)

    assert response.status_code == 200 and response.json() == {"events": 1, "suppressed": 1}
    assert Suppression.objects.get().reason == "complained"
    complained_of, other = (older, latest) if provider in NAMES_THE_MESSAGE else (latest, older)
    assert EmailSend.objects.get(pk=complained_of.pk).complained_at is not None
    assert EmailSend.objects.get(pk=other.pk).complained_at is None
    # One complaint among fewer than COMPLAINT_PAUSE_MIN_SENDS sends pauses, as for POST /api/v1/email-events.
    assert Campaign.objects.get(pk=complained_of.campaign_id).status == "paused"
    assert Campaign.objects.get(pk=other.campaign_id).status == "active"


def test_calls_without_the_workspaces_secret_are_refused_and_change_nothing(client, acme, globex, secret):
    bounce = sendgrid_bounce(OURS)
    anonymous = call(client, "sendgrid", bounce)
    assert anonymous.status_code == 401 and anonymous.json() == {"error": "unauthorized"}
    assert anonymous["WWW-Authenticate"].startswith("Basic")  # Amazon SNS sends credentials only after this
    assert call(client, "sendgrid", bounce, password="guess").status_code == 401
    assert call(client, "sendgrid", bounce, user="globex", password=secret).status_code == 401
    assert call(client, "sendgrid", bounce, user="nobody", password=secret).status_code == 401
    assert not Suppression.objects.exists()


def test_a_new_secret_retires_the_old_urls(client, acme, secret):
    _, new = provider_hook_create(workspace=acme, signing_keys={})
    assert call(client, "postmark", postmark_bounce(OURS), password=secret).status_code == 401
    assert call(client, "postmark", postmark_bounce(OURS), password=new).status_code == 200


def test_a_signing_provider_checks_the_workspaces_key(client, acme, globex, secret):
    forged = call(client, "mailgun", mailgun_bounce(OURS, key="key-of-someone-else"), password=secret)
    assert forged.status_code == 401 and forged.json() == {"error": "invalid signature"}
    _, unsigned = provider_hook_create(workspace=globex, signing_keys={})
    missing = call(client, "mailgun", mailgun_bounce(OURS), user="globex", password=unsigned)
    assert missing.status_code == 422 and "no mailgun signing key" in missing.json()["error"]
    assert not Suppression.objects.exists()


def test_mailgun_signatures_cannot_be_replayed(client, acme, secret):
    stale = mailgun_bounce(OURS)
    stale[0]["signature"] = _mailgun({}, age=20 * 60)[0]["signature"]
    assert call(client, "mailgun", stale, password=secret).status_code == 401
    first = _mailgun(_mailgun_event("failed", OURS, severity="permanent"), token="once")
    assert call(client, "mailgun", first, password=secret).status_code == 200
    replayed = call(client, "mailgun", first, password=secret)
    assert replayed.status_code == 401 and replayed.json() == {"error": "invalid signature"}


def test_a_new_secret_keeps_the_signing_keys_and_bad_keys_are_refused(client, acme, secret):
    _, new = provider_hook_create(workspace=acme, signing_keys={})
    assert call(client, "mailgun", mailgun_bounce(OURS), password=new).status_code == 200
    with pytest.raises(Exception, match="printable ASCII"):
        provider_hook_create(workspace=acme, signing_keys={"mailgun": "kéy"})


def test_bad_calls_get_a_json_error(client, acme, secret):
    garbled = ("{not json", "application/json", {})
    response = client.post(
        "/hooks/email/sendgrid",
        data="{not json",
        content_type="application/json",
        HTTP_AUTHORIZATION="Basic " + base64.b64encode(f"acme:{secret}".encode()).decode(),
    )
    assert response.status_code == 400 and response.json() == {"error": "invalid payload"}
    assert (
        call(client, "postmark", ({"RecordType": "Bounce"}, "application/json", {}), password=secret).status_code == 200
    )
    assert (
        call(client, "sparkpost", ([{"msys": {"a": {}, "b": {}}}], "application/json", {}), password=secret).status_code
        == 400
    )
    assert call(client, "nosuch", garbled, password=secret).json() == {"error": "unknown provider"}
    assert client.get("/hooks/email/sendgrid").status_code == 405
    big = client.post("/hooks/email/sendgrid", data=b"[" + b" " * (1024 * 1024) + b"]", content_type="application/json")
    assert big.status_code == 413 and big.json() == {"error": "request too large"}
    assert not Suppression.objects.exists()


def test_wrong_secrets_are_limited_per_address_and_calls_per_workspace(client, acme, globex, secret, settings):
    settings.RATELIMIT_EMAIL_EVENTS_IP = "5/m"
    settings.RATELIMIT_EMAIL_HOOKS = "8/m"
    _, globex_secret = provider_hook_create(workspace=globex, signing_keys={})
    # Good calls from the provider's address do not use up the failures' budget of that address...
    assert [call(client, "postmark", postmark_bounce(OURS), password=secret).status_code for _ in range(6)] == [200] * 6
    # ...wrong secrets do, and then nothing from that address is even checked...
    statuses = [call(client, "sendgrid", sendgrid_bounce(OURS), password=f"guess{i}").status_code for i in range(7)]
    assert statuses == [401] * 5 + [429] * 2
    refused = call(client, "sendgrid", sendgrid_bounce(OURS), password=secret)
    assert refused.status_code == 429 and refused.json() == {"error": "rate_limited"} and refused["Retry-After"]
    # ...and each workspace has its own budget of calls.
    other = client.__class__(REMOTE_ADDR="192.0.2.99")
    assert [call(other, "postmark", postmark_bounce(OURS), password=secret).status_code for _ in range(3)] == [
        200,
        200,
        429,
    ]
    assert call(other, "postmark", postmark_bounce(OURS), user="globex", password=globex_secret).status_code == 200


def test_a_complaint_naming_another_message_id_blames_no_campaign(client, acme, secret):
    send = EmailSendFactory(enrollment=enrolled(acme, campaign_slug="spring"), message_id=OURS)
    response = call(client, "amazon_ses", ses_complaint("<password-reset.123@app.example>"), password=secret)
    assert response.status_code == 200 and Suppression.objects.get().reason == "complained"
    assert EmailSend.objects.get(pk=send.pk).complained_at is None
    assert Campaign.objects.get(pk=send.campaign_id).status == "active"


def test_postmark_spam_filter_refusals_are_not_complaints_and_bad_addresses_are_hard(client, acme, secret):
    assert call(client, "postmark", _postmark("Bounce", "SpamNotification"), password=secret).json()["suppressed"] == 0
    assert call(client, "postmark", _postmark("Bounce", "BadEmailAddress"), password=secret).json()["suppressed"] == 1
    assert Suppression.objects.get().reason == "bounced"


def test_amazon_sns_subscription_is_confirmed_at_its_own_address_only(client, acme, secret, monkeypatch):
    fetched = []
    monkeypatch.setattr("campaigns.provider_hooks.sns_fetch", fetched.append)

    def confirmation(url: str) -> tuple:
        body = {
            "Type": "SubscriptionConfirmation",
            "MessageId": "165545c9-2a5c-472c-8df2-7ff2be2b3b1b",
            "Token": "2336412f37fb687f5d51e6e241d09c805a5a57b30d712f794cc5f6a988666d92768dd60a747ba6f3beb71854e285d6ad02428b09ceece29417f1f02d609c582afbacc99c583a916b9981dd2728f4ae6fdb82efd087cc3b7849e05798d2d2785c03b0879594eeac82c01f235d0e717736",
            "TopicArn": "arn:aws:sns:us-west-2:123456789012:MyTopic",
            "Message": "You have chosen to subscribe to the topic arn:aws:sns:us-west-2:123456789012:MyTopic.",
            "SubscribeURL": url,
            "Timestamp": "2026-03-02T09:10:00.000Z",
        }
        return (
            body,
            "text/plain; charset=UTF-8",
            {"HTTP_X_AMZ_SNS_MESSAGE_TYPE": "SubscriptionConfirmation", "HTTP_X_AMZ_SNS_MESSAGE_ID": body["MessageId"]},
        )

    good = "https://sns.us-west-2.amazonaws.com/?Action=ConfirmSubscription&TopicArn=arn:aws:sns:us-west-2:123456789012:MyTopic&Token=2336"
    assert call(client, "amazon_ses", confirmation(good), password=secret).status_code == 200
    assert fetched == [good]
    for bad in (
        "http://sns.us-west-2.amazonaws.com/?x",
        "https://sns.us-west-2.amazonaws.com.evil.example/",
        "https://169.254.169.254/",
    ):
        assert call(client, "amazon_ses", confirmation(bad), password=secret).status_code == 400
    assert fetched == [good]
    assert call(client, "amazon_ses", confirmation(good)).status_code == 401  # no secret, no visit
    monkeypatch.setattr("campaigns.provider_hooks.sns_fetch", lambda url: (_ for _ in ()).throw(TimeoutError()))
    failed = call(client, "amazon_ses", confirmation(good), password=secret)
    assert failed.status_code == 502 and "could not confirm" in failed.json()["error"]


@pytest.mark.parametrize(
    ("provider", "body"),
    [
        ("brevo", {"items": [{"Uuid": ["x"]}]}),  # Brevo's inbound webhook
        ("postmark", {"FromFull": {"Email": "a@example.com"}}),  # Postmark's inbound webhook
        ("sparkpost", [{"msys": {"relay_message": {"content": {}}}}]),  # SparkPost's inbound relay
        ("postmark", json.loads("[" * 100 + "]" * 100)),  # not an object
        ("sendgrid", {"not": "a list"}),
    ],
)
def test_payloads_the_parser_cannot_read_are_400(client, acme, secret, provider, body):
    response = call(client, provider, (body, "application/json", {}), password=secret)
    assert response.status_code == 400 and response.json() == {"error": "invalid payload"}


def test_deeply_nested_json_is_400(client, acme, secret):
    deep = "[" * 200_000 + "]" * 200_000
    response = client.post(
        "/hooks/email/postmark",
        data=deep,
        content_type="application/json",
        HTTP_AUTHORIZATION="Basic " + base64.b64encode(f"acme:{secret}".encode()).decode(),
    )
    assert response.status_code == 400


def test_events_with_unusable_fields_are_skipped_not_fatal(client, acme, secret):
    batch = [
        {"email": 12345, "event": "bounce", "type": "bounce", "timestamp": 1772442600},
        {"email": {"@": 1}, "event": "spamreport", "timestamp": 1772442600},
        {"email": ADA, "event": "spamreport", "smtp-id": "<a\u0000b@x>", "timestamp": 1772442600},
        {"email": ADA, "event": "bounce", "type": "bounce", "timestamp": 1772442600},
    ]
    batch[2]["smtp-id"] = "<a\x00b@x>"
    response = call(client, "sendgrid", (batch, "application/json", {}), password=secret)
    assert response.status_code == 200 and response.json() == {"events": 4, "suppressed": 2}


def test_unparseable_credentials_are_401(client, acme, secret):
    for user in ("ac\x00me", "ACME", "a" * 300, ""):
        assert call(client, "postmark", postmark_bounce(OURS), user=user, password=secret).status_code == 401


def test_the_command_prints_the_urls_once_and_keeps_only_a_digest(acme):
    out = StringIO()
    call_command("email_hooks", "create", "acme", "--signing-key", f"mailgun={MAILGUN_KEY}", stdout=out)
    printed = json.loads(out.getvalue())
    url = printed["urls"]["postmark"]
    assert url.startswith("http://acme:") and url.endswith("@127.0.0.1:8000/hooks/email/postmark")
    secret = url.split(":")[2].split("@")[0]
    hook = ProviderHook.objects.get(workspace=acme)
    assert hook.digest == hashlib.sha256(secret.encode()).hexdigest() and secret not in hook.digest
    assert hook.signing_keys == {"mailgun": MAILGUN_KEY}
    with pytest.raises(Exception, match="no signing key is taken for: postmark"):
        call_command("email_hooks", "create", "acme", "--signing-key", "postmark=x", stdout=StringIO())


def test_a_database_outage_is_503_json_so_the_provider_retries(client, acme, secret, monkeypatch):
    from django.db import OperationalError

    def unavailable(**kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr("campaigns.views.provider_events_record", unavailable)
    client.raise_request_exception = False
    response = call(client, "postmark", postmark_bounce(OURS), password=secret)
    assert response.status_code == 503 and response.json() == {"error": "service unavailable"}
    assert response["Retry-After"]
