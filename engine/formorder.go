package engine

import (
	"bytes"
	"encoding/json"
	"slices"
)

// A form's field order (docs/forms.md): JSON objects have none — the
// stored graph (jsonb) and its canonical form sort their keys — so saving
// records the order a form's properties were written in as "x-order" (a
// list of their names) beside each "properties", and every reader puts
// them back in that order (OrderedForm). The schema itself ignores
// "x-order".

// FormOrderKey is the keyword recording the order of a form's properties.
const FormOrderKey = "x-order"

// jsonMember is one jsonMember of a JSON object, in the order written.
type jsonMember struct {
	key string
	val json.RawMessage
}

// jsonMembers reads a JSON object's members in the order written (a repeated
// key keeps its first place and its last value); ok is false for anything
// but an object.
func jsonMembers(raw json.RawMessage) (ms []jsonMember, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		if i := slices.IndexFunc(ms, func(m jsonMember) bool { return m.key == k }); i >= 0 {
			ms[i].val = v
			continue
		}
		ms = append(ms, jsonMember{k, v})
	}
	return ms, true
}

// jsonObject writes members as a JSON object, in their order.
func jsonObject(ms []jsonMember) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key) // a string always encodes
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// RecordFormOrder returns form with "x-order" set beside each
// "properties" (at any depth, through properties and items) to the order
// the properties are written in. Anything but an object is returned as it
// is.
func RecordFormOrder(form json.RawMessage) (json.RawMessage, error) {
	return walkForm(form, func(props []jsonMember) []string {
		keys := make([]string, len(props))
		for i, p := range props {
			keys[i] = p.key
		}
		return keys
	})
}

// OrderedForm returns form with each "properties" written in the order
// its "x-order" lists (names it does not list follow, as they are). A form
// without x-order, or not an object, is returned as it is; nil stays nil.
func OrderedForm(form json.RawMessage) json.RawMessage {
	if form == nil {
		return nil
	}
	out, err := walkForm(form, nil)
	if err != nil {
		return form
	}
	return out
}

// walkForm rewrites a form's schema objects: when record is set, it sets
// x-order to record(properties); otherwise it orders properties by
// x-order. Sub-schemas under properties and items are walked too.
func walkForm(schema json.RawMessage, record func([]jsonMember) []string) (json.RawMessage, error) {
	ms, ok := jsonMembers(schema)
	if !ok {
		return schema, nil
	}
	var order []string
	orderAt := -1
	for i, m := range ms {
		if m.key == FormOrderKey {
			orderAt = i
			_ = json.Unmarshal(m.val, &order)
		}
	}
	for i := range ms {
		var err error
		switch ms[i].key {
		case "properties":
			props, ok := jsonMembers(ms[i].val)
			if !ok {
				continue
			}
			for j := range props {
				if props[j].val, err = walkForm(props[j].val, record); err != nil {
					return nil, err
				}
			}
			if record != nil {
				order = record(props)
			} else {
				props = inOrder(props, order)
			}
			ms[i].val = jsonObject(props)
		case "items":
			if ms[i].val, err = walkForm(ms[i].val, record); err != nil {
				return nil, err
			}
		}
	}
	if record != nil && order != nil {
		ov, _ := json.Marshal(order) // strings always encode
		if orderAt >= 0 {
			ms[orderAt].val = ov
		} else {
			ms = append(ms, jsonMember{FormOrderKey, ov})
		}
	}
	return jsonObject(ms), nil
}

// inOrder puts props in order: those order names first, as it lists them,
// then the others as they are.
func inOrder(props []jsonMember, order []string) []jsonMember {
	if len(order) == 0 {
		return props
	}
	out := make([]jsonMember, 0, len(props))
	used := make([]bool, len(props))
	for _, k := range order {
		for j, p := range props {
			if !used[j] && p.key == k {
				out = append(out, p)
				used[j] = true
				break
			}
		}
	}
	for j, p := range props {
		if !used[j] {
			out = append(out, p)
		}
	}
	return out
}

// RecordFormOrders is RecordFormOrder for the form of each node of a
// visual graph ({"nodes": [{"data": {"form"}}]}), at save. A graph with no
// form is returned as it is.
func RecordFormOrders(graph json.RawMessage) (json.RawMessage, error) {
	return graphForms(graph, RecordFormOrder)
}

// OrderGraphForms is OrderedForm for the form of each node of a visual
// graph, for a reader; a graph that cannot be read is returned as it is.
func OrderGraphForms(graph json.RawMessage) json.RawMessage {
	out, err := graphForms(graph, func(f json.RawMessage) (json.RawMessage, error) { return OrderedForm(f), nil })
	if err != nil {
		return graph
	}
	return out
}

// graphForms rewrites the form of each node of a visual graph with fn,
// keeping everything else as written; unchanged when no node has a form.
func graphForms(graph json.RawMessage, fn func(json.RawMessage) (json.RawMessage, error)) (json.RawMessage, error) {
	// A graph that spells no "form" key, plainly or escaped, has none:
	// taking it apart member by member is for those that might (a 6 MB
	// graph's read spent 1.4 s of CPU here under the race detector).
	if !bytes.Contains(graph, []byte(`"form"`)) && !bytes.Contains(graph, []byte(`\u`)) {
		return graph, nil
	}
	gm, ok := jsonMembers(graph)
	if !ok {
		return graph, nil
	}
	changed := false
	for i := range gm {
		if gm[i].key != "nodes" {
			continue
		}
		var nodes []json.RawMessage
		if !isArray(gm[i].val) || json.Unmarshal(gm[i].val, &nodes) != nil {
			continue
		}
		for j, n := range nodes {
			nm, ok := jsonMembers(n)
			if !ok {
				continue
			}
			for k := range nm {
				if nm[k].key != "data" {
					continue
				}
				dm, ok := jsonMembers(nm[k].val)
				if !ok {
					continue
				}
				for l := range dm {
					if dm[l].key != "form" {
						continue
					}
					f, err := fn(dm[l].val)
					if err != nil {
						return nil, err
					}
					dm[l].val, changed = f, true
				}
				nm[k].val = jsonObject(dm)
			}
			nodes[j] = jsonObject(nm)
		}
		var b bytes.Buffer
		b.WriteByte('[')
		for j, n := range nodes {
			if j > 0 {
				b.WriteByte(',')
			}
			b.Write(n)
		}
		b.WriteByte(']')
		gm[i].val = b.Bytes()
	}
	if !changed {
		return graph, nil
	}
	return jsonObject(gm), nil
}

// isArray reports whether raw is a JSON array.
func isArray(raw json.RawMessage) bool {
	b := bytes.TrimSpace(raw)
	return len(b) > 0 && b[0] == '['
}
