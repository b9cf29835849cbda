// The occurrence id's shape alone, without node imports, so the dashboard's page (bundled for the
// browser) checks ids with the same pattern the API does. Its meaning: occurrence-id.ts.
export const OCCURRENCE_ID =
  /^([A-Za-z0-9._:-]{1,80})@(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)(?:~([1-9]\d{0,8})(?:\.([0-9a-f]{12}))?)?$/;
