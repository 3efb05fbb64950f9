// A real client that no one here wrote: OpenAI's official Node library asks `sieve serve` for
// embeddings. Usage: node openai_embeddings.js BASE_URL API_KEY TEXT...
// Prints {"data": [[...], ...], "model", "usage"} (the floats the client returns).
'use strict';
const OpenAI = require('openai');

async function main() {
  const [baseURL, apiKey, ...input] = process.argv.slice(2);
  const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60000 });
  const r = await client.embeddings.create({ model: 'sieve-mini', input });
  console.log(JSON.stringify({ data: r.data.map((d) => Array.from(d.embedding)), model: r.model, usage: r.usage }));
}

main().catch((e) => { console.error(String(e)); process.exit(1); });
