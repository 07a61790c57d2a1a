// llama.cpp's greedy tokens, through node-llama-cpp 3.21.1's bindings to its prebuilt CPU
// build: the peer that `kiln decode --greedy` is compared with (tests/llama/). Not a
// dependency of kiln.
//
//   node llama_cpp_greedy.mjs JOBS.json OUT.json
// JOBS.json: [{"model": FILE.gguf, "prompts": [[ids...], ...], "n": 32}, ...], a job optionally
// with "lora": [{"filePath": ADAPTER.gguf, "scale": S}, ...] (LoRA adapters applied at run
// time: createContext's lora.adapters) and "key" (its name in OUT.json; default: the model).
// OUT.json gets {KEY: [[ids...] per prompt]}: the n token ids generated after each prompt, the
// prompt evaluated as given (no BOS added, no tokenizer) and each next token the argmax of
// llama.cpp's logits (temperature 0), not stopping at end-of-generation tokens.
// The peers' folder is $KILN_NODE_PEERS (it holds node_modules); exit 77 when it is absent.
import fs from "node:fs";
import {loadLlama} from "./node_llama_cpp.mjs";

const llama = await loadLlama();
const [jobsPath, outPath] = process.argv.slice(2);
const jobs = JSON.parse(fs.readFileSync(jobsPath, "utf8"));
const out = {};
for (const job of jobs) {
    const model = await llama.loadModel({modelPath: job.model});
    const longest = Math.max(...job.prompts.map((p) => p.length));
    const context = await model.createContext({contextSize: longest + job.n + 8, threads: 1,
                                               batchSize: longest + job.n + 8, sequences: 1,
                                               ...(job.lora ? {lora: {adapters: job.lora}} : {})});
    const results = [];
    for (const prompt of job.prompts) {
        const seq = context.getSequence();
        const ids = [];
        for await (const token of seq.evaluate(prompt, {temperature: 0})) {
            ids.push(token);
            if (ids.length === job.n) break;
        }
        results.push(ids);
        seq.dispose();
    }
    out[job.key ?? job.model] = results;
    await context.dispose();
    await model.dispose();
}
fs.writeFileSync(outPath, JSON.stringify(out, null, 1));
