// A react-jsonschema-form validator over @cfworker/json-schema, which
// interprets a schema instead of compiling it to code: stitchd's
// Content-Security-Policy (script-src 'self') forbids the eval that Ajv
// (rjsf's own validator) needs. Draft 2020-12, every error collected. It
// is a convenience: the server checks each answer again.
import { Validator, type OutputUnit } from "@cfworker/json-schema";
import {
  createErrorHandler,
  toErrorSchema,
  unwrapErrorHandler,
  validationDataMerge,
  type CustomValidator,
  type ErrorTransformer,
  type RJSFSchema,
  type RJSFValidationError,
  type UiSchema,
  type ValidationData,
  type ValidatorType,
} from "@rjsf/utils";

// The keywords that only say "something below failed": their child
// errors say what.
const WRAPPERS = new Set(["properties", "patternProperties", "items", "prefixItems", "$ref", "$dynamicRef", "allOf", "false", "dependentSchemas", "then", "else", "unevaluatedItems"]);

const validators = new WeakMap<object, Validator>();

function validatorOf(schema: object): Validator {
  let v = validators.get(schema);
  if (!v) {
    v = new Validator(schema as any, "2020-12", false);
    validators.set(schema, v);
  }
  return v;
}

// property turns an instance location (#/tags/0) into rjsf's property
// path (.tags.0).
function property(loc: string): string {
  const rest = loc.replace(/^#/, "");
  const parts = rest ? rest.split("/").slice(1) : [];
  return parts
    .map((raw) => {
      let p = raw.replace(/~1/g, "/").replace(/~0/g, "~");
      try {
        p = decodeURIComponent(p);
      } catch {
        /* keep it as it is */
      }
      return /^[A-Za-z_$][\w$]*$|^\d+$/.test(p) ? `.${p}` : `[${JSON.stringify(p)}]`;
    })
    .join("");
}

// at reads the value a JSON pointer (a keyword location, #/properties/code/pattern)
// names in the schema; undefined when it names nothing there.
export function at(schema: unknown, pointer: string): unknown {
  const rest = pointer.replace(/^#/, "");
  let node: any = schema;
  for (const raw of rest ? rest.split("/").slice(1) : []) {
    const k = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (node === null || typeof node !== "object" || !(k in node)) return undefined;
    node = node[k];
  }
  return node;
}

// message says a validator error the way a person reads it beside a field.
// The validator says only "String does not match pattern.": the pattern
// is read from the schema at the error's place.
export function message(e: OutputUnit, schema?: unknown): string {
  const m = e.error;
  let r: RegExpExecArray | null;
  switch (e.keyword) {
    case "required":
      return "is required";
    case "format":
      return (r = /match format "([^"]+)"/.exec(m)) !== null ? `must be a valid ${r[1]}` : m;
    case "type":
      return (r = /Expected "([^"]+)"/.exec(m)) !== null ? `must be ${/^[aeiou]/.test(r[1]) ? "an" : "a"} ${r[1]}` : m;
    case "minimum":
      return (r = /is less than (\S+?)\.?$/.exec(m)) !== null ? `must be at least ${r[1]}` : m;
    case "exclusiveMinimum":
      return (r = /than (\S+?)\.?$/.exec(m)) !== null ? `must be more than ${r[1]}` : m;
    case "maximum":
      return (r = /is greater than (\S+?)\.?$/.exec(m)) !== null ? `must be at most ${r[1]}` : m;
    case "exclusiveMaximum":
      return (r = /than (\S+?)\.?$/.exec(m)) !== null ? `must be less than ${r[1]}` : m;
    case "minLength":
      return (r = /\(\d+ < (\d+)\)/.exec(m)) !== null ? (r[1] === "1" ? "must not be empty" : `must have at least ${r[1]} characters`) : m;
    case "maxLength":
      return (r = /\(\d+ > (\d+)\)/.exec(m)) !== null ? `must have at most ${r[1]} characters` : m;
    case "enum":
    case "const":
      return "is not one of the allowed values";
    case "pattern": {
      if ((r = /pattern "(.*)"\.?$/.exec(m)) !== null) return `must match ${r[1]}`;
      const p = at(schema, e.keywordLocation);
      return typeof p === "string" ? `must match the pattern ${p}` : "is not in the expected form";
    }
  }
  return m.replace(/\.$/, "");
}

// rjsfErrors turns the validator's output into rjsf's errors.
function rjsfErrors(errors: OutputUnit[], schema?: unknown): RJSFValidationError[] {
  const out: RJSFValidationError[] = [];
  for (const e of errors) {
    if (WRAPPERS.has(e.keyword)) continue;
    // An alternative of anyOf / oneOf / not: the combinator's own error
    // is the one to show.
    if (/\/(anyOf|oneOf|not)\/./.test(e.keywordLocation.replace(/^#/, ""))) continue;
    let prop = property(e.instanceLocation);
    if (e.keyword === "required") {
      const r = /required property "([^"]+)"/.exec(e.error);
      if (r) prop += property(`#/${r[1].replace(/~/g, "~0").replace(/\//g, "~1")}`);
    }
    const msg = message(e, schema);
    out.push({ name: e.keyword, property: prop, message: msg, stack: `${prop || "."} ${msg}`.trim(), schemaPath: e.keywordLocation, params: {} });
  }
  return out;
}

export class FormValidator implements ValidatorType<any, RJSFSchema, any> {
  rawValidation<Result = any>(schema: RJSFSchema, formData?: any): { errors?: Result[]; validationError?: Error } {
    try {
      const r = validatorOf(schema).validate(formData === undefined ? null : formData);
      return { errors: r.valid ? undefined : (r.errors as unknown as Result[]) };
    } catch (err) {
      return { validationError: err instanceof Error ? err : new Error(String(err)) };
    }
  }

  validateFormData(
    formData: any,
    schema: RJSFSchema,
    customValidate?: CustomValidator<any, RJSFSchema, any>,
    transformErrors?: ErrorTransformer<any, RJSFSchema, any>,
    uiSchema?: UiSchema<any, RJSFSchema, any>,
  ): ValidationData<any> {
    const raw = this.rawValidation<OutputUnit>(schema, formData);
    let errors = raw.validationError
      ? [{ property: "", message: `the form cannot be checked here: ${raw.validationError.message}`, stack: raw.validationError.message }]
      : rjsfErrors(raw.errors ?? [], schema);
    if (transformErrors) errors = transformErrors(errors, uiSchema);
    let data: ValidationData<any> = { errors, errorSchema: toErrorSchema(errors) };
    if (customValidate) {
      const handler = customValidate(formData, createErrorHandler(formData), uiSchema);
      data = validationDataMerge(data, unwrapErrorHandler(handler));
    }
    return data;
  }

  // isValid is how rjsf picks an anyOf / oneOf alternative: the
  // alternative, with the root's definitions for its references.
  isValid(schema: RJSFSchema, formData: any, rootSchema: RJSFSchema): boolean {
    try {
      const s: Record<string, any> = { ...schema };
      if (rootSchema.$defs && !s.$defs) s.$defs = rootSchema.$defs;
      if (rootSchema.definitions && !s.definitions) s.definitions = rootSchema.definitions;
      return new Validator(s as any, "2020-12", true).validate(formData === undefined ? null : formData).valid;
    } catch {
      return false;
    }
  }
}

export const formValidator = new FormValidator();

// checkable says whether the schema can be checked here at all.
export function checkable(schema: object): boolean {
  try {
    validatorOf(schema).validate(null);
    return true;
  } catch {
    return false;
  }
}
