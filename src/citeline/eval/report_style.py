"""The stylesheet of the HTML evaluation report (eval/report.py), kept apart from the markup."""

REPORT_CSS = """
:root{--ink:#1d2330;--muted:#5d6677;--line:#dde2ea;--bg:#f6f7fa;--card:#fff;--accent:#2f6fdb;
--bad:#c2410c;--good:#15803d;--warn:#a16207;--track:#e9edf3}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
color:var(--ink);background:var(--bg)}
main{max-width:1200px;margin:0 auto;padding:28px 28px 60px}
h1{font-size:26px;margin:0 0 4px}
h2{font-size:19px;margin:36px 0 12px;padding-bottom:6px;border-bottom:1px solid var(--line)}
h3{font-size:15px;margin:18px 0 6px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
.sub{color:var(--muted);margin:0}
.sub b{color:var(--ink);font-weight:600}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:12px;margin-top:20px}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:12px 14px}
.card .k{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
.card .v{font-size:26px;font-weight:650;margin-top:2px}
.card .d{font-size:12px;color:var(--muted)}
.panel{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:10px 16px 14px}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:14px}
svg text{font-family:inherit}
.warn{background:#fff8e6;border:1px solid #f1d48a;border-radius:10px;padding:10px 14px;margin-top:18px}
.warn li{margin:2px 0}
table{width:100%;border-collapse:collapse;background:var(--card);font-size:13px}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid var(--line);vertical-align:top;
overflow-wrap:anywhere}
.tablewrap{overflow-x:auto;border:1px solid var(--line);border-radius:10px}
td.src{max-width:180px}
th{position:sticky;top:0;background:#eef1f6;font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.q{max-width:460px}
.badge{display:inline-block;border-radius:999px;padding:1px 9px;font-size:12px;font-weight:600;white-space:nowrap}
.ok{background:#dcfce7;color:#14532d}
.fail{background:#ffedd5;color:#7c2d12}
.muted{color:var(--muted)}
.failure{background:var(--card);border:1px solid var(--line);border-left:4px solid var(--bad);
border-radius:8px;padding:12px 16px;margin:12px 0}
.failure .head{display:flex;gap:10px;align-items:baseline;flex-wrap:wrap}
.failure .id{overflow-wrap:anywhere;font-family:ui-monospace,"DejaVu Sans Mono",monospace;color:var(--muted);font-size:12px}
.failure dl{display:grid;grid-template-columns:130px 1fr;gap:4px 14px;margin:8px 0 0}
.failure dt{color:var(--muted);font-size:13px}
.failure dd{margin:0;overflow-wrap:anywhere}
blockquote{margin:4px 0;padding:4px 10px;border-left:3px solid var(--line);background:#fafbfc;
font-size:13.5px;overflow-wrap:anywhere}
blockquote.good{border-left-color:var(--good)}
blockquote.badq{border-left-color:var(--bad)}
.src{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12px;color:var(--muted)}
pre{background:#0f172a;color:#e2e8f0;padding:14px;border-radius:8px;overflow:auto;font-size:12px}
dl.defs{display:grid;grid-template-columns:230px 1fr;gap:4px 16px}
dl.defs dt{font-weight:600}
dl.defs dd{margin:0;color:var(--muted)}
footer{margin-top:40px;color:var(--muted);font-size:12px}
"""
