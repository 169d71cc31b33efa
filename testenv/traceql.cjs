// Parses TraceQL queries with Grafana's TraceQL grammar (the one its Tempo
// query editor uses) for the dashboard tests: reads a JSON array of
// queries on stdin and writes, for each, its syntax errors and the
// attributes and intrinsics it names.
const { parser } = require("@grafana/lezer-traceql");

let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const out = JSON.parse(input).map((q) => {
    const res = { errors: [], attributes: [], intrinsics: [] };
    parser.parse(q).iterate({
      enter(n) {
        const text = q.slice(n.from, n.to);
        if (n.type.isError) {
          res.errors.push(`syntax error at ${n.from}: ${JSON.stringify(q.slice(Math.max(0, n.from - 10), n.to + 10))}`);
        } else if (n.name === "AttributeField") {
          res.attributes.push(text);
        } else if (n.name === "IntrinsicField") {
          res.intrinsics.push(text);
        }
      },
    });
    return res;
  });
  process.stdout.write(JSON.stringify(out));
});
