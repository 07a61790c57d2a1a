// The adapter in llama.cpp: node-llama-cpp (3.21.1, its prebuilt CPU build) loads the base
// GGUF, applies the LoRA GGUF at run time (createContext's lora option) and continues each
// prompt greedily, as `kiln decode --lora ... --greedy` does.
//
//   node llama_cpp.mjs BASE.gguf ADAPTER.gguf MAX_NEW PROMPT...
// prints one line per prompt: its greedy continuation up to the first newline or MAX_NEW
// tokens. The model is byte-level (kiln's default tokenizer: token id = byte), so the
// prompt's ids are its UTF-8 bytes and the continuation's bytes are its ids.
// node-llama-cpp is found in $KILN_NODE_PEERS (a folder holding node_modules, as
// scripts/install-peers.sh makes it); exit 77 with one line when it is absent.
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const peers = process.env.KILN_NODE_PEERS;
const entry = peers && path.join(peers, "node_modules", "node-llama-cpp", "dist", "index.js");
if (!entry || !fs.existsSync(entry)) {
    console.log(`skipped: node-llama-cpp absent (KILN_NODE_PEERS=${peers ?? "unset"})`);
    process.exit(77);
}
const {getLlama} = await import(pathToFileURL(entry).href);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error", progressLogs: false});

const [basePath, adapterPath, maxNewText, ...prompts] = process.argv.slice(2);
const maxNew = Number(maxNewText);
const model = await llama.loadModel({modelPath: basePath});
const context = await model.createContext({contextSize: 256, threads: 1, sequences: 1,
                                           lora: {adapters: [{filePath: adapterPath, scale: 1}]}});
for (const prompt of prompts) {
    const seq = context.getSequence();
    const ids = [];
    for await (const token of seq.evaluate([...Buffer.from(prompt, "utf8")], {temperature: 0})) {
        if (token === 10) break; // the end of the line
        ids.push(token);
        if (ids.length === maxNew) break;
    }
    console.log(Buffer.from(ids).toString("utf8"));
    seq.dispose();
}
await context.dispose();
await model.dispose();
