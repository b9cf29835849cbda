/**
 * The HTML shell. Asset paths are relative, so the page works wherever it is mounted: `/dashboard`
 * locally, behind the CLI's signing proxy, or under an API Gateway stage. The text inside `#app` is
 * what a person sees until the script runs, and stays if it cannot: never a blank page.
 */
export function dashboardHtml(): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="color-scheme" content="light dark">
  <title>Hourglass dashboard</title>
  <link rel="icon" href="data:,">
  <link rel="stylesheet" href="dashboard/assets/app.css">
  <script type="module" src="dashboard/assets/app.js"></script>
</head>
<body>
  <div id="app"><main class="boot"><h1>Hourglass</h1><p>Loading the dashboard…</p>
  <noscript><p>The dashboard needs JavaScript. The same data is in the API: <a href="v1/stats">/v1/stats</a>.</p></noscript></main></div>
</body>
</html>`;
}

/** Where the page cannot be built (a Lambda bundle carries no sources): say what to do instead. */
export function unavailableHtml(reason: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Hourglass dashboard</title></head>
<body><main><h1>Hourglass dashboard</h1>
<p>This server cannot build the dashboard (${escapeHtml(reason)}).</p>
<p>For a deployment, run <code>npx hourglass dashboard --url &lt;api url&gt; --sigv4</code> on your machine.</p>
</main></body></html>`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
