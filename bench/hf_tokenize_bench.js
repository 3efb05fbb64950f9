// Hugging Face tokenizers (npm `tokenizers`, Rust core) throughput on the same files as
// bench/bench_tokenizer.cpp: MB of text per second with special tokens, no truncation. Two ways,
// both reported: one encode() call per line, and encodeBatch() over all lines (run with
// RAYON_NUM_THREADS=1 for one thread, as bench/bench_tokenizer.sh does).
//   node hf_tokenize_bench.js TOKENIZER_JSON TEXT_FILE [MIN_SECONDS]
'use strict';
const fs = require('fs');
const { Tokenizer } = require('tokenizers');

async function main() {
  const [file, text, minArg] = process.argv.slice(2);
  const minTime = Number(minArg || 2);
  const tok = Tokenizer.fromFile(file);
  tok.disableTruncation();
  tok.disablePadding();
  const lines = fs.readFileSync(text, 'utf8').split('\n').filter((l) => l.length > 0);
  const bytes = lines.reduce((n, l) => n + Buffer.byteLength(l, 'utf8'), 0);
  const name = file.split('/').pop();
  for (const mode of ['encode', 'encodeBatch']) {
    let rounds = 0;
    let tokens = 0;
    const t0 = process.hrtime.bigint();
    let s = 0;
    do {
      if (mode === 'encode') {
        for (const l of lines) tokens += (await tok.encode(l, null, { addSpecialTokens: true })).getIds().length;
      } else {
        const encs = await tok.encodeBatch(lines, { addSpecialTokens: true });
        for (const e of encs) tokens += e.getIds().length;
      }
      rounds += 1;
      s = Number(process.hrtime.bigint() - t0) / 1e9;
    } while (s < minTime);
    console.log(JSON.stringify({ impl: `hf-tokenizers ${mode}`, tokenizer: name, lines: lines.length, bytes,
      tokens: tokens / rounds, seconds: +s.toFixed(3), mb_per_s: +((bytes * rounds) / s / 1e6).toFixed(3) }));
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
