// What the tool-call tests share (tools_test.mjs, tools_lfm2_test.mjs): the two tools they
// offer (the person schema of tests/data, less the properties that only lengthen prompts and
// answers: every kind of keyword stays, lengths, bounds, enum arrays, oneOf/anyOf, a date
// format, a $ref pattern; and an integer adder), and the check of calls' arguments by Debian's
// python3-jsonschema.
import { execFileSync } from 'node:child_process';
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';

export function testTools(schemaPath) {
  const schema = JSON.parse(readFileSync(schemaPath, 'utf8'));
  for (const p of ['score', 'pair', 'extra']) delete schema.properties[p];
  return [
    { type: 'function', function: { name: 'save_person', description: 'Save a person',
      parameters: schema } },
    { type: 'function', function: { name: 'add', description: 'Add two numbers', parameters: {
      type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } },
      required: ['a', 'b'], additionalProperties: false } } },
  ];
}

// Arguments validated by jsonschema (draft 2020-12, formats checked) against each call's
// tool's schema; calls: [[name, arguments JSON text], ...]. Returns the lines naming the
// invalid ones ('' when all are valid).
export function validateCalls(tools, calls) {
  const script = `
import json, sys, jsonschema
schemas = json.load(open(sys.argv[1]))
for i, (name, args) in enumerate(json.load(sys.stdin)):
    s = schemas[name]
    cls = jsonschema.validators.validator_for(s, default=jsonschema.Draft202012Validator)
    try:
        errs = [e.message for e in cls(s, format_checker=jsonschema.FormatChecker()).iter_errors(json.loads(args))]
    except ValueError as e:
        errs = ["not JSON: %s" % e]
    if errs:
        print(i, name, repr(args), errs)
`;
  const schemas = Object.fromEntries(tools.map((t) => [t.function.name, t.function.parameters]));
  const file = `${process.env.TMPDIR ?? '/tmp'}/tova-tools-${process.pid}.json`;
  writeFileSync(file, JSON.stringify(schemas));
  try {
    return execFileSync('/usr/bin/python3', ['-c', script, file],
      { input: JSON.stringify(calls), encoding: 'utf8' }).trim();
  } finally {
    unlinkSync(file);
  }
}
