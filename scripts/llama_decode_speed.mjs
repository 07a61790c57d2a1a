// llama.cpp's single-stream decoding speed on a GGUF file, through node-llama-cpp's bindings
// (npm i -E node-llama-cpp@3.21.1: llama.cpp's prebuilt CPU and Vulkan builds). The peer of
// `kiln bench decode` in scripts/bench_decode_peer.sh; not a dependency of kiln.
//
// usage: node llama_decode_speed.mjs MODEL.gguf PROMPT_TOKENS TOKENS THREADS REPEATS [gpu]
// The prompt is token ids 0..vocab-1 drawn by a fixed rule; decoding is greedy. Prints one
// JSON line: prefill and decode tokens/s (medians over the repeats; the first run is a
// warm-up), each decode timed from the first generated token to the last, as kiln's.
// node-llama-cpp is found in $KILN_NODE_PEERS/node_modules when that is set (the tests'
// peers), else beside this script (npm's own resolution).
import path from "node:path";
import {pathToFileURL} from "node:url";

const peers = process.env.KILN_NODE_PEERS;
const {getLlama} = await import(peers ? pathToFileURL(path.join(peers, "node_modules", "node-llama-cpp", "dist", "index.js")).href
                                      : "node-llama-cpp");

const [modelPath, promptArg, tokensArg, threadsArg, repeatsArg, gpu] = process.argv.slice(2);
const promptLen = Number(promptArg), tokens = Number(tokensArg), threads = Number(threadsArg);
const repeats = Number(repeatsArg);
const llama = await getLlama({gpu: gpu === "gpu" ? "vulkan" : false, build: "never", logLevel: "error", progressLogs: false});
const model = await llama.loadModel({modelPath});
const vocab = 256; // every kiln model, byte-level or BPE, has the ids below 256
const prompt = Array.from({length: promptLen}, (_, i) => (i * 7919 + 13) % vocab);
const median = (v) => { const s = [...v].sort((a, b) => a - b); const n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };
const prefill = [], decode = [];
for (let r = -1; r < repeats; r++) {
    const context = await model.createContext({contextSize: promptLen + tokens + 1, threads, batchSize: promptLen});
    const seq = context.getSequence();
    const t0 = performance.now();
    let first = 0, count = 0;
    for await (const token of seq.evaluate(prompt, {temperature: 0})) {
        count++;
        if (count === 1) first = performance.now();
        if (count > tokens) break;
    }
    const end = performance.now();
    if (r >= 0) {
        prefill.push(promptLen / ((first - t0) / 1e3)); // the prompt's evaluation and the first token
        decode.push(tokens / ((end - first) / 1e3));
    }
    await context.dispose();
}
console.log(JSON.stringify({model: modelPath, threads, prompt: promptLen, tokens,
                            prefill_tokens_per_s: median(prefill), decode_tokens_per_s: median(decode)}));
