// Reference tokenization with Hugging Face's own library (npm `tokenizers`, Rust core).
// Usage: node hf_tokenize.js TOKENIZER_JSON INPUT_JSONL
// Each input line is {"a": text, "b": text or null}; each output line is
// {"ids":[...],"type_ids":[...],"tokens":[...],"offsets":[[begin,end],...]} with offsets
// converted to UTF-8 byte offsets into the text they point into (a or b).
'use strict';
const fs = require('fs');
const { Tokenizer } = require('tokenizers');

// Prefix sums: UTF-8 byte offset of each code point index and of each UTF-16 index.
function byteMaps(s) {
  const byCp = [0];
  const byUnit = new Array(s.length + 1).fill(0);
  let bytes = 0;
  let unit = 0;
  for (const ch of s) {
    const cp = ch.codePointAt(0);
    byUnit[unit] = bytes;
    if (ch.length === 2) byUnit[unit + 1] = bytes;
    bytes += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    unit += ch.length;
    byCp.push(bytes);
  }
  byUnit[unit] = bytes;
  return { byCp, byUnit };
}

async function main() {
  const [file, input] = process.argv.slice(2);
  const tok = Tokenizer.fromFile(file);
  tok.disableTruncation();
  tok.disablePadding();
  const lines = fs.readFileSync(input, 'utf8').split('\n').filter((l) => l.length > 0);
  const unit = process.env.HF_OFFSET_UNIT || 'cp';  // how the binding counts offsets
  const out = [];
  for (const line of lines) {
    const { a, b } = JSON.parse(line);
    let row;
    try {
      const enc = await tok.encode(a, b === undefined ? null : b, { addSpecialTokens: true });
      const seq = enc.getSequenceIds();
      const maps = [byteMaps(a), b == null ? null : byteMaps(b)];
      const offsets = enc.getOffsets().map(([s, e], i) => {
        const m = seq[i] == null ? null : maps[seq[i]];
        if (!m) return [s, e];
        const t = unit === 'cp' ? m.byCp : m.byUnit;
        return [t[s] === undefined ? -1 : t[s], t[e] === undefined ? -1 : t[e]];
      });
      row = { ids: enc.getIds(), type_ids: enc.getTypeIds(), tokens: enc.getTokens(), offsets };
    } catch (err) {
      row = { error: String(err) };
    }
    out.push(JSON.stringify(row));
  }
  fs.writeFileSync(1, out.join('\n') + '\n');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
