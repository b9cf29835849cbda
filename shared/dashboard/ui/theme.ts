import { useEffect, useState } from "preact/hooks";

export type ThemeChoice = "auto" | "light" | "dark";
const KEY = "hourglass.theme";
const CHANGED = "hourglass-theme";

export function themeChoice(): ThemeChoice {
  const saved = localStorage.getItem(KEY);
  return saved === "light" || saved === "dark" ? saved : "auto";
}

/** Applies the choice to <html data-theme>; "auto" follows the system's light or dark setting. */
export function applyTheme(choice: ThemeChoice): void {
  if (choice === "auto") {
    localStorage.removeItem(KEY);
    delete document.documentElement.dataset.theme;
  } else {
    localStorage.setItem(KEY, choice);
    document.documentElement.dataset.theme = choice;
  }
  window.dispatchEvent(new Event(CHANGED));
}

function resolved(): "light" | "dark" {
  const choice = themeChoice();
  if (choice !== "auto") return choice;
  return matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

/** The theme in effect; charts draw on a canvas, so they redraw when it changes. */
export function useResolvedTheme(): "light" | "dark" {
  const [theme, setTheme] = useState(resolved);
  useEffect(() => {
    const update = () => setTheme(resolved());
    const media = matchMedia("(prefers-color-scheme: dark)");
    media.addEventListener("change", update);
    window.addEventListener(CHANGED, update);
    return () => {
      media.removeEventListener("change", update);
      window.removeEventListener(CHANGED, update);
    };
  }, []);
  return theme;
}
