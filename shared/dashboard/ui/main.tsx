import { render } from "preact";
import "./styles.css";
import { App } from "./app.tsx";
import { applyTheme, themeChoice } from "./theme.ts";

applyTheme(themeChoice());
const root = document.getElementById("app")!;

/** Anything that escapes the views still ends as a sentence on the page, never a blank screen. */
function fatal(error: unknown): void {
  const box = document.createElement("p");
  box.className = "error";
  box.setAttribute("role", "alert");
  box.textContent = `The dashboard hit an error: ${error instanceof Error ? error.message : String(error)}. Reload the page to try again.`;
  document.body.prepend(box);
}

window.addEventListener("error", (e) => fatal(e.error ?? e.message));
window.addEventListener("unhandledrejection", (e) => fatal(e.reason));
try {
  root.textContent = "";
  render(<App />, root);
} catch (error) {
  fatal(error);
}
