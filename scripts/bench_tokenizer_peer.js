// GPT-2 encoding throughput of the npm package gpt-tokenizer (r50k_base, GPT-2's
// vocabulary), a peer for `kiln tokenizer bench --peer`. Prints "MB/s X" (best of 5).
//   cd /tmp/x && npm i gpt-tokenizer
//   NODE_PATH=/tmp/x/node_modules node scripts/bench_tokenizer_peer.js FILE
const fs = require('fs');
const { encode } = require('gpt-tokenizer/cjs/encoding/r50k_base');
const bytes = fs.readFileSync(process.argv[2]);
const text = bytes.toString('utf8');
let best = 0;
for (let r = 0; r < 5; r++) {
  const start = process.hrtime.bigint();
  encode(text, { allowedSpecial: new Set(), disallowedSpecial: new Set() });
  const s = Number(process.hrtime.bigint() - start) / 1e9;
  best = Math.max(best, bytes.length / s / 1e6);
}
console.log('MB/s ' + best.toFixed(3));
