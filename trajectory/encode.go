package trajectory

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
)

// UnserializableError reports a value that cannot be encoded as JSON, with
// the path of the offending field so the caller can find it. It replaces
// encoding/json's errors, which name a type but not where it was.
type UnserializableError struct {
	// Field is the dotted path of the value from the root the caller named:
	// "turn.result.items[3].fn". Map keys that are not plain identifiers
	// appear quoted in brackets: `turn.result["a.b"]`.
	Field string
	// Reason says what is wrong: "func", "NaN", "cycle", "invalid JSON in
	// json.RawMessage", ...
	Reason string
	// Err is the error a MarshalJSON or MarshalText method returned, if any.
	Err error
}

// Error implements error.
func (e *UnserializableError) Error() string {
	if e.Err != nil {
		return "unserializable value at " + e.Field + ": " + e.Reason + ": " + e.Err.Error()
	}
	return "unserializable value at " + e.Field + ": " + e.Reason
}

// Unwrap returns the underlying marshaler error, if any.
func (e *UnserializableError) Unwrap() error { return e.Err }

// maxDepth matches encoding/json's decoder, so nothing is written that the
// reader could not read back.
const maxDepth = 10000

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	numberType        = reflect.TypeFor[json.Number]()
	timeType          = reflect.TypeFor[time.Time]()
)

// ValidateEncodable reports whether v can be encoded as JSON exactly as
// encoding/json would encode it, without anything being dropped or made up.
// On the first value that cannot, it returns an *UnserializableError whose
// Field is rooted at root ("turn" gives "turn.result.items[3].fn").
//
// It rejects NaN and ±Inf floats, complex numbers, channels, funcs and
// unsafe pointers; pointer, map and slice cycles; maps whose key type JSON
// cannot express; json.RawMessage that is not valid JSON; json.Number that
// is not a number; times outside years 0-9999; nesting deeper than the
// decoder accepts; and MarshalJSON or MarshalText methods that fail or emit
// invalid JSON. Map entries are checked in key order, so the error is the
// same on every call. Fields tagged "-", unexported fields and empty fields
// with omitempty/omitzero are skipped, as encoding/json skips them.
func ValidateEncodable(v any, root string) error {
	w := walkers.Get().(*walker)
	*w = walker{root: root, path: w.path[:0], stack: w.stack[:0]}
	w.walk(reflect.ValueOf(v))
	err := w.err
	w.err = nil
	walkers.Put(w)
	return err
}

// walkers keeps walkers, and the path and stack they grew, between records.
var walkers = sync.Pool{New: func() any { return new(walker) }}

// Marshal validates v with ValidateEncodable and encodes it as compact JSON
// without HTML escaping. Map keys are sorted and struct fields keep their
// declaration order, so the bytes are deterministic. It does not redact.
func Marshal(v any, root string) ([]byte, error) {
	if err := ValidateEncodable(v, root); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("marshal %s: %w", root, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// pathElem is one step of a field path: a name, or an index when name is
// empty and quoted is false.
type pathElem struct {
	name   string
	index  int
	quoted bool
}

// visit identifies a pointer, map or slice on the current path; a slice is
// identified by its backing array and length, as encoding/json does.
type visit struct {
	ptr uintptr
	len int
}

type walker struct {
	root  string
	path  []pathElem
	stack []visit
	depth int
	err   error
}

func (w *walker) fail(reason string, err error) {
	if w.err != nil {
		return
	}
	w.err = &UnserializableError{Field: formatPath(w.root, w.path), Reason: reason, Err: err}
}

func formatPath(root string, path []pathElem) string {
	var b strings.Builder
	b.WriteString(root)
	for _, p := range path {
		switch {
		case p.quoted:
			b.WriteByte('[')
			b.WriteString(strconv.Quote(p.name))
			b.WriteByte(']')
		case p.name != "":
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p.name)
		default:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(p.index))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// keyElem is the path element for map key k: plain identifiers are dotted,
// anything else is quoted.
func keyElem(k string) pathElem {
	if k == "" {
		return pathElem{name: k, quoted: true}
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return pathElem{name: k, quoted: true}
		}
	}
	return pathElem{name: k}
}

func (w *walker) push(p pathElem) { w.path = append(w.path, p) }
func (w *walker) pop()            { w.path = w.path[:len(w.path)-1] }

// enter records a reference value on the current path and reports whether
// it was already there (a cycle).
func (w *walker) enter(v visit) bool {
	for _, s := range w.stack {
		if s == v {
			return false
		}
	}
	w.stack = append(w.stack, v)
	return true
}

func (w *walker) leave() { w.stack = w.stack[:len(w.stack)-1] }

func (w *walker) nest() bool {
	w.depth++
	if w.depth > maxDepth {
		w.fail("nested deeper than "+strconv.Itoa(maxDepth), nil)
		return false
	}
	return true
}

func (w *walker) walk(v reflect.Value) {
	if w.err != nil || !v.IsValid() {
		return
	}
	t := v.Type()
	switch t {
	case rawMessageType:
		if v.IsNil() {
			return // encodes as null
		}
		if b := v.Bytes(); len(b) == 0 {
			w.fail("empty json.RawMessage", nil)
		} else if !json.Valid(b) {
			w.fail("invalid JSON in json.RawMessage", nil)
		}
		return
	case numberType:
		if s := v.String(); s != "" && !isValidNumber(s) {
			w.fail(fmt.Sprintf("invalid json.Number %q", s), nil)
		}
		return
	case timeType:
		// time.Time.MarshalJSON fails outside these years; checking here
		// avoids formatting every timestamp twice.
		if !v.CanInterface() {
			return
		}
		if y := v.Interface().(time.Time).Year(); y < 0 || y > 9999 {
			w.fail("time year "+strconv.Itoa(y)+" outside [0,9999]", nil)
		}
		return
	}
	if t.Implements(marshalerType) {
		w.marshaler(v)
		return
	}
	if t.Kind() != reflect.Pointer && v.CanAddr() && reflect.PointerTo(t).Implements(marshalerType) {
		w.marshaler(v.Addr())
		return
	}
	if t.Implements(textMarshalerType) {
		w.textMarshaler(v)
		return
	}
	if t.Kind() != reflect.Pointer && v.CanAddr() && reflect.PointerTo(t).Implements(textMarshalerType) {
		w.textMarshaler(v.Addr())
		return
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
	case reflect.Float32, reflect.Float64:
		switch f := v.Float(); {
		case math.IsNaN(f):
			w.fail("NaN", nil)
		case math.IsInf(f, 1):
			w.fail("+Inf", nil)
		case math.IsInf(f, -1):
			w.fail("-Inf", nil)
		}
	case reflect.Complex64, reflect.Complex128:
		w.fail("complex number", nil)
	case reflect.Chan:
		w.fail("channel", nil)
	case reflect.Func:
		w.fail("func", nil)
	case reflect.UnsafePointer:
		w.fail("unsafe.Pointer", nil)
	case reflect.Interface:
		w.walk(v.Elem())
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		if !w.enter(visit{ptr: uintptr(v.UnsafePointer())}) {
			w.fail("cycle", nil)
			return
		}
		w.walk(v.Elem())
		w.leave()
	case reflect.Map:
		w.walkMap(v)
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		if t.Elem().Kind() == reflect.Uint8 {
			p := reflect.PointerTo(t.Elem())
			if !p.Implements(marshalerType) && !p.Implements(textMarshalerType) {
				return // []byte encodes as base64
			}
		}
		if !w.enter(visit{ptr: uintptr(v.UnsafePointer()), len: v.Len()}) {
			w.fail("cycle", nil)
			return
		}
		w.walkList(v)
		w.leave()
	case reflect.Array:
		w.walkList(v)
	case reflect.Struct:
		w.walkStruct(v)
	default:
		w.fail("unsupported kind "+t.Kind().String(), nil)
	}
}

func (w *walker) walkList(v reflect.Value) {
	if !w.nest() {
		return
	}
	for i := range v.Len() {
		w.push(pathElem{index: i})
		w.walk(v.Index(i))
		w.pop()
		if w.err != nil {
			break
		}
	}
	w.depth--
}

func (w *walker) walkMap(v reflect.Value) {
	t := v.Type()
	switch t.Key().Kind() {
	case reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
	default:
		if !t.Key().Implements(textMarshalerType) {
			w.fail("map key type "+t.Key().String(), nil)
			return
		}
	}
	if v.IsNil() {
		return
	}
	if !w.enter(visit{ptr: uintptr(v.UnsafePointer())}) {
		w.fail("cycle", nil)
		return
	}
	defer w.leave()
	if !w.nest() {
		return
	}
	// Walk every entry and keep the error of the smallest key: the one
	// encoding/json would meet first, and the same on every call.
	var (
		firstErr error
		firstKey string
	)
	// One key, and where it is safe one value, reused for every entry
	// instead of a copy each.
	key := reflect.New(t.Key()).Elem()
	var val reflect.Value
	if reuseMapValue(t.Elem()) {
		val = reflect.New(t.Elem()).Elem()
	}
	iter := v.MapRange()
	for iter.Next() {
		key.SetIterKey(iter)
		k, err := mapKey(key)
		if err != nil {
			if firstErr == nil || k < firstKey {
				firstKey = k
				firstErr = &UnserializableError{Field: formatPath(w.root, w.path), Reason: "map key MarshalText", Err: err}
			}
			continue
		}
		if firstErr != nil && k >= firstKey {
			continue
		}
		w.push(keyElem(k))
		if val.IsValid() {
			val.SetIterValue(iter)
			w.walk(val)
		} else {
			w.walk(iter.Value())
		}
		w.pop()
		if w.err != nil {
			firstKey, firstErr = k, w.err
			w.err = nil
		}
	}
	w.err = firstErr
	w.depth--
}

// reuseMapValue reports whether map values of type t can be walked through
// a reused, addressable reflect.Value. encoding/json sees map values as not
// addressable, so a type that behaves differently when addressable (a
// pointer-receiver marshaler, here or in a field) must be walked as a copy.
func reuseMapValue(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Interface, reflect.Pointer:
		return true // an interface's or pointer's target is the same either way
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		p := reflect.PointerTo(t)
		return !p.Implements(marshalerType) && !p.Implements(textMarshalerType)
	}
	return false
}

// isNilRef reports whether v is a nil pointer or interface.
func isNilRef(v reflect.Value) bool {
	k := v.Kind()
	return (k == reflect.Pointer || k == reflect.Interface) && v.IsNil()
}

// mapKey returns the JSON object key encoding/json uses for k.
func mapKey(k reflect.Value) (string, error) {
	if k.Kind() == reflect.String {
		return k.String(), nil
	}
	if tm, ok := k.Interface().(encoding.TextMarshaler); ok {
		if k.Kind() == reflect.Pointer && k.IsNil() {
			return "", nil
		}
		b, err := tm.MarshalText()
		return string(b), err
	}
	switch k.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(k.Int(), 10), nil
	default:
		return strconv.FormatUint(k.Uint(), 10), nil
	}
}

func (w *walker) marshaler(v reflect.Value) {
	if isNilRef(v) || !v.CanInterface() {
		return // a nil encodes as null
	}
	b, err := v.Interface().(json.Marshaler).MarshalJSON()
	if err != nil {
		w.fail("MarshalJSON", err)
		return
	}
	if !json.Valid(b) {
		w.fail("MarshalJSON returned invalid JSON", nil)
	}
}

func (w *walker) textMarshaler(v reflect.Value) {
	if isNilRef(v) || !v.CanInterface() {
		return
	}
	if _, err := v.Interface().(encoding.TextMarshaler).MarshalText(); err != nil {
		w.fail("MarshalText", err)
	}
}

func (w *walker) walkStruct(v reflect.Value) {
	if !w.nest() {
		return
	}
	w.fields(v)
	w.depth--
}

// fields walks the fields of struct v; embedded structs without a JSON name
// are walked in place, as their fields are promoted into the same object.
func (w *walker) fields(v reflect.Value) {
	for _, f := range structFields(v.Type()) {
		fv := v.Field(f.index)
		if f.inline {
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					continue
				}
				fv = fv.Elem()
			}
			w.fields(fv)
		} else {
			if f.omitEmpty && isEmptyValue(fv) || f.omitZero && isZero(fv) {
				continue
			}
			w.push(pathElem{name: f.name})
			w.walk(fv)
			w.pop()
		}
		if w.err != nil {
			return
		}
	}
}

type field struct {
	index     int
	name      string
	inline    bool
	omitEmpty bool
	omitZero  bool
}

var fieldCache sync.Map // reflect.Type -> []field

func structFields(t reflect.Type) []field {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]field)
	}
	var out []field
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := sf.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if sf.Anonymous {
			// encoding/json ignores unexported embedded non-structs.
			if !sf.IsExported() && ft.Kind() != reflect.Struct {
				continue
			}
			if name == "" && ft.Kind() == reflect.Struct {
				out = append(out, field{index: i, inline: true})
				continue
			}
		} else if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f := field{index: i, name: name}
		for opts != "" {
			var o string
			o, opts, _ = strings.Cut(opts, ",")
			switch o {
			case "omitempty":
				f.omitEmpty = true
			case "omitzero":
				f.omitZero = true
			}
		}
		out = append(out, f)
	}
	fieldCache.Store(t, out)
	return out
}

// isEmptyValue is encoding/json's omitempty test.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64,
		reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// isZero is encoding/json's omitzero test: an IsZero method if there is one.
func isZero(v reflect.Value) bool {
	type zeroer interface{ IsZero() bool }
	if isNilRef(v) {
		return true
	}
	if !v.CanInterface() {
		return v.IsZero()
	}
	if z, ok := v.Interface().(zeroer); ok {
		return z.IsZero()
	}
	if v.CanAddr() {
		if z, ok := v.Addr().Interface().(zeroer); ok {
			return z.IsZero()
		}
	}
	return v.IsZero()
}

// isValidNumber reports whether s is a JSON number literal.
func isValidNumber[T ~string | ~[]byte](s T) bool {
	i, n := 0, len(s)
	digits := func() int {
		j := i
		for i < n && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < n && s[i] == '-' {
		i++
	}
	switch {
	case i < n && s[i] == '0':
		i++
	case i < n && '1' <= s[i] && s[i] <= '9':
		digits()
	default:
		return false
	}
	if i < n && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < n && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == n
}

// encoder turns records into redacted lines. It is not safe for concurrent
// use; a Writer owns one.
type encoder struct {
	buf  bytes.Buffer
	enc  *json.Encoder
	red  *Redactor
	line []byte
}

func newEncoder(red *Redactor) *encoder {
	e := &encoder{red: red}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}

// errUnknownRecord is returned for a Record implementation outside this
// package (the interface is sealed, but a nil interface can still arrive).
var errUnknownRecord = errors.New("unknown record type")

// encode returns the record's line, newline included. The slice is reused by
// the next call.
func (e *encoder) encode(r Record) ([]byte, error) {
	var wire any
	switch r := r.(type) {
	case Header:
		wire = headerWire{TypeHeader, r}
		if err := ValidateEncodable(r, TypeHeader); err != nil {
			return nil, err
		}
	case Turn:
		wire = turnWire{TypeTurn, r}
		if err := ValidateEncodable(r, TypeTurn); err != nil {
			return nil, err
		}
	case ToolDisabled:
		wire = toolDisabledWire{TypeToolDisabled, r}
	case Footer:
		wire = footerWire{TypeFooter, r}
		if err := ValidateEncodable(r, TypeFooter); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("encode %T: %w", r, errUnknownRecord)
	}
	e.buf.Reset()
	if err := e.enc.Encode(wire); err != nil {
		// ValidateEncodable passed, so only a marshaler that changed its
		// mind gets here; still an error, never a silent drop.
		return nil, fmt.Errorf("encode %s: %w", r.RecordType(), err)
	}
	raw := bytes.TrimSuffix(e.buf.Bytes(), []byte("\n"))
	line, err := e.red.appendJSON(e.line[:0], raw)
	if err != nil {
		return nil, fmt.Errorf("redact %s: %w", r.RecordType(), err)
	}
	e.line = append(line, '\n')
	return e.line, nil
}

// MarshalRecord returns the line a Writer would write for r, without the
// trailing newline: validated, with the type discriminator first, and
// redacted with the package's pattern rules (no registered secrets).
// Re-encoding a record read from a run record reproduces its line exactly.
func MarshalRecord(r Record) ([]byte, error) {
	line, err := newEncoder(defaultRedactor).encode(r)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(line[:len(line)-1]), nil
}
