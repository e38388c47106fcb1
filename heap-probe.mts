globalThis.gc!(); 
const base = process.memoryUsage().heapUsed;
for (const m of process.argv.slice(2)) await import(m);
globalThis.gc!(); globalThis.gc!();
console.log(process.argv.slice(2).join(' '), (process.memoryUsage().heapUsed / 1e6 - base/1e6).toFixed(1));
