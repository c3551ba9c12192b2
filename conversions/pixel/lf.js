/* lftrack pixel: keeps the click id (lf_cid) in a first-party cookie and reports signup-form leads. */
(() => {
  'use strict';
  const d = document, w = window, P = 'lf_cid', ID = /^[\w-]{1,64}$/;
  const s = d.currentScript || d.querySelector('script[src*="/lf.js"][data-key]');
  if (!s || (w.lf && w.lf.clickId)) return; // pasted twice: one copy is enough
  const key = s.getAttribute('data-key');
  const domain = s.getAttribute('data-cookie-domain');
  const api = s.src.replace(/\/lf\.js([?#].*)?$/, '') + '/api/v1/browser/conversions';
  const sent = {};
  const dec = (v) => { try { return decodeURIComponent(v); } catch (e) { return null; } };
  const cid = () => (d.cookie.match(/(?:^|;\s*)lf_cid=([\w-]{1,64})(?:;|$)/) || [])[1];

  // Landing: keep the click id for 90 days, then drop it from the address bar; every other
  // parameter and the fragment stay exactly as they were.
  try {
    let found, kept = [];
    for (const p of location.search.slice(1).split('&')) {
      const i = p.indexOf('='), k = dec(i < 0 ? p : p.slice(0, i));
      if (k === P) found = dec(i < 0 ? '' : p.slice(i + 1)); else if (p) kept.push(p);
    }
    if (found !== undefined) {
      if (ID.test(found)) {
        d.cookie = P + '=' + found + '; Max-Age=7776000; Path=/; SameSite=Lax' +
          (domain ? '; Domain=' + domain : '') + (location.protocol === 'https:' ? '; Secure' : '');
      }
      history.replaceState(history.state, '', location.pathname + (kept.length ? '?' + kept.join('&') : '') + location.hash);
    }
  } catch (e) { /* never break the page */ }

  // One lead per click id and person per page view, whatever the number of clicks on "submit".
  const lead = (email, name) => {
    const c = cid();
    if (!c || !key) return false;
    const body = { key, event: 'lead', click_id: c };
    email = (email || '').trim();
    if (/^[^\s@]+@[^\s@]+$/.test(email)) body.customer = { email, name: (name || '').trim().slice(0, 200) };
    const json = JSON.stringify(body);
    if (sent[json]) return true;
    sent[json] = 1;
    // text/plain: a simple request, no preflight, no delay. A keepalive fetch in CORS mode always
    // carries the page's real Origin (a beacon may send "null" under a strict Referrer-Policy) and
    // outlives the navigation the form starts; browsers without keepalive get a beacon.
    if (w.Request && 'keepalive' in Request.prototype) {
      fetch(api, { method: 'POST', body: json, keepalive: true, credentials: 'omit' }).catch(() => {});
    } else if (navigator.sendBeacon) {
      navigator.sendBeacon(api, json);
    }
    return true;
  };

  const val = (f, sel) => { const e = f.querySelector(sel); return e ? e.value : ''; };
  // Capture phase: seen before the page's own handlers can stop the event; never prevented.
  d.addEventListener('submit', (e) => {
    try {
      const f = e.target;
      if (!(f instanceof HTMLFormElement) || f.closest('[data-lf-ignore]')) return;
      const email = f.querySelector('[data-lf-email],input[type=email],input[name=email]');
      if (!email && !f.hasAttribute('data-lf-signup')) return;
      const name = val(f, '[data-lf-name],input[name=name],input[name=full_name],[autocomplete=name]') ||
        (val(f, '[name=first_name],[autocomplete=given-name]') + ' ' + val(f, '[name=last_name],[autocomplete=family-name]')).trim();
      lead(email && email.value, name);
    } catch (x) { /* the form's own submission goes on */ }
  }, true);

  // Stripe Payment Links and Buy Buttons take the click as client_reference_id (docs/payments.md).
  const R = 'client_reference_id', pay = (c = cid()) => c && d.querySelectorAll('a[href^="https://buy.stripe.com/"],stripe-buy-button').forEach((e) => {
    if (e.href) { const u = new URL(e.href); if (!u.searchParams.has(R)) { u.searchParams.set(R, c); e.href = u.href; } }
    else if (!e.hasAttribute('client-reference-id')) e.setAttribute('client-reference-id', c);
  });
  try { pay(); let t; new MutationObserver(() => { t = t || setTimeout(() => { t = 0; pay(); }); }).observe(d.documentElement, { childList: true, subtree: true }); } catch (e) {}

  w.lf = { lead: (o) => lead((o || {}).email, (o || {}).name), clickId: () => cid() || null };
})();
