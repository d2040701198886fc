/** The inspector page (placeholder until the UI lands). */
export const INSPECTOR_HTML = `<!doctype html><title>agentsessions</title><h1>agentsessions</h1>`;
