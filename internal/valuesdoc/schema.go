package valuesdoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Schema sets the "description" of each value's property in a values.schema.json and changes
// nothing else: key order and numbers are kept, the output is indented 2 spaces. A value the
// schema has no property for is an error naming it.
func Schema(schema []byte, values []Value) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	root, err := decode(dec)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	for _, v := range values {
		obj, ok := root.(*object)
		for _, k := range v.Path {
			if !ok {
				break
			}
			props, _ := obj.get("properties").(*object)
			if props == nil {
				ok = false
				break
			}
			obj, ok = props.get(k).(*object)
		}
		if !ok {
			return nil, fmt.Errorf("no property for %s (values.yaml has it; add it to the schema)", v.Key())
		}
		obj.set("description", v.Description)
	}
	var compact bytes.Buffer
	if err := encode(&compact, root); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// object is a JSON object that keeps the order of its keys.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) get(k string) any { return o.vals[k] }

// set replaces the value of k in place, or appends k.
func (o *object) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// decode reads one JSON value: *object, []any, json.Number, string, bool or nil.
func decode(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		o := &object{vals: map[string]any{}}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := decode(dec)
			if err != nil {
				return nil, err
			}
			o.set(kt.(string), v)
		}
		_, err := dec.Token()
		return o, err
	case json.Delim('['):
		a := []any{}
		for dec.More() {
			v, err := decode(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token()
		return a, err
	}
	return tok, nil
}

// encode writes v compact; strings as they are (no HTML escaping).
func encode(w io.Writer, v any) error {
	switch v := v.(type) {
	case *object:
		io.WriteString(w, "{")
		for i, k := range v.keys {
			if i > 0 {
				io.WriteString(w, ",")
			}
			if err := encode(w, k); err != nil {
				return err
			}
			io.WriteString(w, ":")
			if err := encode(w, v.vals[k]); err != nil {
				return err
			}
		}
		_, err := io.WriteString(w, "}")
		return err
	case []any:
		io.WriteString(w, "[")
		for i, e := range v {
			if i > 0 {
				io.WriteString(w, ",")
			}
			if err := encode(w, e); err != nil {
				return err
			}
		}
		_, err := io.WriteString(w, "]")
		return err
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := io.WriteString(w, strings.TrimSuffix(b.String(), "\n"))
	return err
}
