import { createHash } from 'node:crypto';

/**
 * The portal's one stylesheet, served from the api itself (CSP default-src 'self': no CDN, no
 * remote font). System fonts: every platform's own covers Latin, Greek, Cyrillic and CJK names.
 */
export const PORTAL_CSS = `:root{color-scheme:light;--ink:#1d2330;--muted:#5b6475;--line:#dfe3ea;--accent:#1f5fbf;--accent-ink:#fff;--bar:#2f6fd1;--bad:#a4161a;--good:#1b7a3d;--paper:#fff;--wash:#f5f7fa}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Helvetica Neue",Arial,sans-serif;color:var(--ink);background:var(--wash)}
a{color:var(--accent)}
a:focus-visible,summary:focus-visible{outline:3px solid var(--accent);outline-offset:2px;border-radius:2px}
.skip{position:absolute;left:-999px;top:0;background:var(--accent);color:var(--accent-ink);padding:8px 12px}
.skip:focus{left:8px;top:8px}
header.top{background:var(--paper);border-bottom:1px solid var(--line)}
header.top .wrap{display:flex;justify-content:space-between;align-items:center;gap:16px}
.wrap{max-width:980px;margin:0 auto;padding:16px 20px}
.org{font-weight:600}
h1{font-size:1.6rem;margin:8px 0 4px}
h2{font-size:1.2rem;margin:0 0 12px}
h3{font-size:1rem;margin:16px 0 8px}
.lead,.note{color:var(--muted)}
section.card{background:var(--paper);border:1px solid var(--line);border-radius:8px;padding:16px 20px;margin:16px 0}
table{width:100%;border-collapse:collapse}
th,td{text-align:left;padding:8px 6px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-size:.8rem;text-transform:uppercase;letter-spacing:.03em;color:var(--muted)}
.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.status{display:inline-block;padding:1px 8px;border-radius:10px;font-size:.85rem;background:var(--wash);border:1px solid var(--line)}
.status.paid{color:var(--good);border-color:currentColor}
.status.overdue{color:var(--bad);border-color:currentColor;font-weight:600}
.docs a{margin-right:10px}
.chart svg{width:100%;height:auto;display:block}
.chart .bar{fill:var(--bar)}
.chart .grid{stroke:var(--line);stroke-width:1}
.chart .axis{fill:var(--muted);font-size:11px}
.chart figcaption{font-weight:600;margin-top:4px}
.chart details{margin-top:6px}
figure{margin:0}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}
dl.facts dt{color:var(--muted)}
dl.facts dd{margin:0}
.totals{max-width:420px;margin-left:auto}
.totals td{border:none;padding:3px 6px}
.totals .grand td{border-top:2px solid var(--ink);font-weight:700}
.actions a{display:inline-block;margin:8px 12px 0 0;padding:8px 14px;border-radius:6px;background:var(--accent);color:var(--accent-ink);text-decoration:none}
.actions a.secondary{background:var(--paper);color:var(--accent);border:1px solid var(--accent)}
footer.bottom{color:var(--muted);font-size:.85rem;padding:24px 20px 40px;max-width:980px;margin:0 auto}
.alert-form{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-end;margin-top:12px}
.alert-form label{display:flex;flex-direction:column;font-size:.85rem;color:var(--muted);gap:4px}
input,select{font:inherit;padding:6px 8px;border:1px solid var(--line);border-radius:6px;background:var(--paper);color:inherit}
button{font:inherit;padding:7px 14px;border-radius:6px;border:1px solid var(--accent);background:var(--accent);color:var(--accent-ink);cursor:pointer}
td form button{background:var(--paper);color:var(--accent)}
.error{max-width:560px;margin:80px auto;background:var(--paper);border:1px solid var(--line);border-radius:8px;padding:28px}
@media (max-width:640px){.hide-narrow{display:none}}
@media print{header.top,.actions,.skip{display:none}body{background:#fff}section.card{border:none}}
`;

/** The stylesheet's path names its content, so a page never pairs with another version of it. */
export const PORTAL_CSS_PATH = `/portal/assets/portal-${createHash('sha256').update(PORTAL_CSS).digest('hex').slice(0, 12)}.css`;

/** The pages' icon, so that browsers do not ask for /favicon.ico (a 404 in their console). */
export const PORTAL_ICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#1f5fbf"/><path d="M9 8h14v3H9zm0 6.5h14v3H9zM9 21h9v3H9z" fill="#fff"/></svg>';
export const PORTAL_ICON_PATH = '/portal/assets/icon.svg';
