import { writeFileSync } from "node:fs";
import { loadConfig } from "../shared/config.ts";
import { describeApi } from "../shared/http/app.ts";
import { silentLogger } from "../shared/logger.ts";

/** `npm run openapi`: writes docs/openapi.json from the code. A test fails when the two differ. */
export function renderOpenApi(): string {
  return `${JSON.stringify(describeApi(loadConfig({}), silentLogger), null, 2)}\n`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync("docs/openapi.json", renderOpenApi());
  console.log("wrote docs/openapi.json");
}
