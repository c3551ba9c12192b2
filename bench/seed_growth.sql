-- Grows a freshly migrated lftrack database to production size, inside PostgreSQL (no ORM row by row):
-- by default 1,000,000 customers, 5,000,000 clicks and conversion events, 500,000 enrollments.
-- Run by bench/seed_growth.sh, on a database it has just created.
\set ON_ERROR_STOP on
\timing on
-- Sizes: psql -v customers=N -v events=M [-v clicks=K] (the small baseline uses 10000 and 50000; clicks
-- default to as many as events, each click then converting once; with more clicks, every (K / M)th converts).
\if :{?customers}
\else
  \set customers 1000000
\endif
\if :{?events}
\else
  \set events 5000000
\endif
\if :{?clicks}
\else
  \set clicks :events
\endif
BEGIN;
INSERT INTO workspaces_workspace (name, slug, tracking_key, allowed_origins, created_at)
VALUES ('Growth', 'growth', 'pk_growth_' || md5(random()::text), '', now())
ON CONFLICT (slug) DO NOTHING;
SELECT id AS ws FROM workspaces_workspace WHERE slug = 'growth' \gset

INSERT INTO campaigns_campaign (workspace_id, slug, name, status, created_at)
VALUES (:ws, 'growth', 'Growth campaign', 'active', now())
ON CONFLICT DO NOTHING;
SELECT id AS camp FROM campaigns_campaign WHERE workspace_id = :ws AND slug = 'growth' \gset
INSERT INTO campaigns_campaignemail (workspace_id, campaign_id, position, subject, body, delay_minutes, active, created_at)
SELECT :ws, :camp, p, 'Step ' || p, 'Hello {{ name }}', 60 * p, true, now() FROM generate_series(1, 3) p
ON CONFLICT DO NOTHING;

-- 1,000 posts with one link each; posts 1-100 belong to the campaign.
INSERT INTO clicks_post (workspace_id, title, created_at)
SELECT :ws, 'Growth post ' || g, now() FROM generate_series(1, 1000) g;
INSERT INTO campaigns_campaignpost (workspace_id, campaign_id, post_id, created_at)
SELECT :ws, :camp, id, now() FROM clicks_post WHERE workspace_id = :ws ORDER BY id LIMIT 100
ON CONFLICT DO NOTHING;
INSERT INTO clicks_link (workspace_id, post_id, key, destination, created_at)
SELECT :ws, p.id, 'g' || substr(md5(p.id::text || random()::text), 1, 12), 'https://shop.example.com/p/' || p.id, now()
FROM clicks_post p WHERE p.workspace_id = :ws AND NOT EXISTS (SELECT 1 FROM clicks_link l WHERE l.post_id = p.id);
-- The links' UTM fields, a handful of each, and tags: 10 per workspace, a link in one to three of them (the
-- breakdowns by UTM field and by tag).
UPDATE clicks_link SET utm_source = (ARRAY['newsletter', 'x.com', 'linkedin', 'google', ''])[1 + id % 5],
    utm_medium = (ARRAY['email', 'social', 'social', 'cpc', ''])[1 + id % 5],
    utm_campaign = 'growth-' || (id % 7)
WHERE workspace_id = :ws;
INSERT INTO clicks_tag (workspace_id, name, created_at)
SELECT :ws, 'tag-' || g, now() FROM generate_series(1, 10) g ON CONFLICT DO NOTHING;
INSERT INTO clicks_link_tags (link_id, tag_id)
SELECT l.id, t.id FROM clicks_link l JOIN clicks_tag t ON t.workspace_id = l.workspace_id
WHERE l.workspace_id = :ws AND (l.id + t.id) % 10 < 1 + l.id % 3 ON CONFLICT DO NOTHING;
COMMIT;

BEGIN;
INSERT INTO customers_customer (workspace_id, email, name, avatar_url, external_id, source, created_at, updated_at)
SELECT :ws, 'person' || g || '@growth.example', 'Person ' || g, '', 'ext_' || g,
       (ARRAY['api', 'pixel', 'manual'])[1 + g % 3], now() - g * interval '1 second', now()
FROM generate_series(1, :customers) g
ON CONFLICT DO NOTHING;
COMMIT;

BEGIN;
CREATE TEMP TABLE growth_links AS
SELECT row_number() OVER (ORDER BY id) AS n, id, utm_source, utm_medium, utm_campaign FROM clicks_link
WHERE workspace_id = :ws;
SELECT count(*) AS nlinks FROM growth_links \gset
SELECT min(id) AS first_customer FROM customers_customer WHERE workspace_id = :ws \gset
SELECT coalesce(max(id), 0) AS clicks_before, greatest(:clicks / :events, 1) AS stride FROM clicks_click \gset

-- The click id's unique index is built after the rows, not row by row: a random key's insert touches a random
-- page of an index larger than shared_buffers (50,000,000 clicks: hours row by row, minutes sorted). The
-- constraint comes back as the migrations made it (its name and definition read from the catalog); the
-- index is then as compact as a freshly built one, where one grown by random inserts is about 70% full.
SELECT conname AS click_id_unique, pg_get_constraintdef(oid) AS click_id_unique_def FROM pg_constraint
WHERE conrelid = 'clicks_click'::regclass AND contype = 'u' AND pg_get_constraintdef(oid) = 'UNIQUE (click_id)' \gset
ALTER TABLE clicks_click DROP CONSTRAINT :"click_id_unique";

-- The clicks' times follow their ids over the last 30 days, as a live database's do (retention's purge relies
-- on it). Device, browser and referrer as clicks/agents.py files them, a handful of each (the dashboard's breakdowns);
-- countries, 20 of them and none for one click in ten; the UTM fields their link had.
-- In statements of 5,000,000 clicks, each checking its foreign keys as it ends (PostgreSQL queues a deferred
-- check per row in memory until the commit), a line printed after each.
SET CONSTRAINTS ALL IMMEDIATE;
CREATE TEMP TABLE growth_params AS SELECT :ws::bigint AS ws, :clicks::bigint AS clicks, :nlinks::bigint AS nlinks;
DO $$
DECLARE
  p growth_params;
  lo bigint := 1;
BEGIN
  SELECT * INTO p FROM growth_params;
  WHILE lo <= p.clicks LOOP
    INSERT INTO clicks_click (workspace_id, link_id, click_id, created_at, user_agent, referrer, device, browser, os,
                              referrer_domain, country, utm_source, utm_medium, utm_campaign)
    SELECT p.ws, l.id, md5(g::text || random()::text), now() - interval '30 days' + g * (interval '30 days' / p.clicks),
           'growth-seed', '',
           (ARRAY['mobile', 'desktop', 'mobile', 'tablet'])[1 + g % 4],
           (ARRAY['Mobile Safari', 'Chrome', 'Chrome Mobile', 'Firefox', 'Edge'])[1 + g % 5],
           (ARRAY['iOS', 'Windows', 'Android', 'Mac OS X'])[1 + g % 4],
           (ARRAY['', 't.co', 'www.google.com', 'news.ycombinator.com', 'www.linkedin.com', 'l.facebook.com'])[1 + g % 6],
           (ARRAY['US', 'GB', 'DE', 'FR', 'IN', 'BR', 'CA', 'AU', 'NL', 'ES', 'IT', 'JP', 'MX', 'SE', 'PL', 'US', 'GB',
                  'DE', 'US', 'IN', '', ''])[1 + g % 22],
           l.utm_source, l.utm_medium, l.utm_campaign
    FROM generate_series(lo, least(lo + 4999999, p.clicks)) g JOIN growth_links l ON l.n = 1 + g % p.nlinks;
    RAISE NOTICE 'seed_growth: % of % clicks at %', least(lo + 4999999, p.clicks), p.clicks, clock_timestamp();
    lo := lo + 5000000;
  END LOOP;
END $$;
SET maintenance_work_mem = '1GB';
ALTER TABLE clicks_click ADD CONSTRAINT :"click_id_unique" :click_id_unique_def;
RESET maintenance_work_mem;

-- One event per click (per stride-th click when there are more clicks than events): two leads for every
-- sale, spread over 1,000,000 customers and 30 days; one sale in five in euros.
INSERT INTO conversions_conversionevent
    (workspace_id, click_id, link_id, customer_id, event, value_cents, event_name, meta, occurred_at, channel,
     currency)
SELECT c.workspace_id, c.id, c.link_id, :first_customer + (c.id % :customers),
       CASE WHEN c.id % 3 = 0 THEN 'sale' ELSE 'lead' END,
       CASE WHEN c.id % 3 = 0 THEN 100 * (c.id % 500) END,
       'growth', '{}'::jsonb, c.created_at, 'api', CASE WHEN c.id % 15 = 0 THEN 'EUR' ELSE 'USD' END
FROM clicks_click c WHERE c.id > :clicks_before AND (c.id - :clicks_before) % :stride = 0
  AND c.id <= :clicks_before + :stride * :events;

INSERT INTO campaigns_enrollment
    (workspace_id, campaign_id, customer_id, state, enrolled_at, last_sent_position, next_send_at, held_name)
SELECT :ws, :camp, id, (ARRAY['active', 'active', 'stopped', 'completed'])[1 + id % 4],
       created_at, 0, CASE WHEN id % 4 < 2 THEN now() + (id % 86400) * interval '1 second' END, ''
FROM customers_customer WHERE workspace_id = :ws AND id < :first_customer + :customers / 2
ON CONFLICT DO NOTHING;
INSERT INTO campaigns_campaignlead (workspace_id, campaign_id, customer_id, enrollment_id, outcome, channel, created_at)
SELECT :ws, :camp, customer_id, id, 'created', 'api', enrolled_at FROM campaigns_enrollment WHERE campaign_id = :camp
  AND NOT EXISTS (SELECT 1 FROM campaigns_campaignlead cl WHERE cl.enrollment_id = campaigns_enrollment.id);
COMMIT;

ANALYZE;
SELECT (SELECT count(*) FROM customers_customer) AS customers,
       (SELECT count(*) FROM clicks_click) AS clicks,
       (SELECT count(*) FROM conversions_conversionevent) AS conversions,
       (SELECT count(*) FROM campaigns_enrollment) AS enrollments;
