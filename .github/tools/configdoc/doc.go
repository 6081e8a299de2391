package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
)

// Field is one field of a core's Config: its name, its type as written in the core, and its default.
type Field struct {
	Name, Type, Default string
	// Summary is the first sentence of the field's doc.
	Summary string
}

// CoreFields reads the fields of the generic Config declared in the core package in dir, and its type
// parameters' names in order.
func CoreFields(dir string) ([]Field, []string, error) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, nil, err
	}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return nil, nil, err
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if ts.Name.Name != "Config" || !ok || ts.TypeParams == nil {
					continue
				}
				var params []string
				for _, p := range ts.TypeParams.List {
					for _, n := range p.Names {
						params = append(params, n.Name)
					}
				}
				fields, err := structFields(fset, st)
				return fields, params, err
			}
		}
	}
	return nil, nil, fmt.Errorf("%s: no generic type Config", filepath.Clean(dir))
}

// A field's doc ends with its default ("Optional. Default: X"), or says it is required ("Required, unless Y").
var (
	defaultRe  = regexp.MustCompile(`(?s)Default:\s*(.*)$`)
	requiredRe = regexp.MustCompile(`(?ms)^(Required.*)$`)
)

func structFields(fset *token.FileSet, st *ast.StructType) ([]Field, error) {
	var fields []Field
	for _, f := range st.Fields.List {
		var typ bytes.Buffer
		if err := format.Node(&typ, fset, f.Type); err != nil {
			return nil, err
		}
		def, doc := "", f.Doc.Text()
		if m := defaultRe.FindStringSubmatch(doc); m != nil {
			def = strings.Join(strings.Fields(m[1]), " ")
		} else if m := requiredRe.FindStringSubmatch(doc); m != nil {
			def = "none: " + strings.ToLower(m[1][:1]) + strings.Join(strings.Fields(m[1][1:]), " ")
		}
		for _, n := range f.Names {
			if !n.IsExported() {
				continue // not the user's: set by the core
			}
			if def == "" {
				return nil, fmt.Errorf("field Config.%s: its doc says neither \"Default: ...\" nor \"Required ...\"", n.Name)
			}
			fields = append(fields, Field{Name: n.Name, Type: typ.String(), Default: def, Summary: firstSentence(doc)})
		}
	}
	return fields, nil
}

// aliasRe finds an adapter's Config alias and the comment above it.
var aliasRe = regexp.MustCompile(`(?m)((?:^//.*\n)*)^type Config = core\.Config\[(.*)\]\n`)

// Rewrite returns src with the comment above its Config alias written from fields, the type parameters params
// replaced by the alias's type arguments.
func Rewrite(src []byte, fields []Field, params []string) ([]byte, error) {
	loc := aliasRe.FindSubmatchIndex(src)
	if loc == nil {
		return nil, fmt.Errorf("no `type Config = core.Config[...]` line")
	}
	args := splitArgs(string(src[loc[4]:loc[5]]))
	if len(args) != len(params) {
		return nil, fmt.Errorf("the alias has %d type arguments, the core's Config %d", len(args), len(params))
	}
	var b strings.Builder
	b.WriteString("// Config defines the config for the middleware: the core's Config (core.Config, where each field is documented\n")
	b.WriteString("// in full) with this framework's types. A zero field takes its default, from ConfigDefault; an invalid one\n")
	b.WriteString("// makes New panic, naming the field. The fields and their defaults:\n//\n")
	for _, f := range fields {
		b.WriteString(wrap(fmt.Sprintf("%s %s: %s", f.Name, substitute(f.Type, params, args), f.Default)))
	}
	out := append([]byte{}, src[:loc[2]]...)
	out = append(out, b.String()...)
	return append(out, src[loc[3]:]...), nil
}

// splitArgs splits type arguments at the commas outside brackets and parentheses.
func splitArgs(s string) []string {
	var args []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case ',':
			if depth == 0 {
				args = append(args, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(args, strings.TrimSpace(s[start:]))
}

// substitute replaces each whole-word type parameter in typ by its argument.
func substitute(typ string, params, args []string) string {
	for i, p := range params {
		typ = regexp.MustCompile(`\b`+regexp.QuoteMeta(p)+`\b`).ReplaceAllLiteralString(typ, "\x00"+fmt.Sprint(i)+"\x00")
	}
	for i := range params {
		typ = strings.ReplaceAll(typ, "\x00"+fmt.Sprint(i)+"\x00", args[i])
	}
	return typ
}

// wrap writes a list item as comment lines of at most 120 columns, the continuation indented under the text.
func wrap(item string) string {
	const width = 120 - len("// ")
	var b strings.Builder
	line := ""
	for _, w := range strings.Fields(item) {
		switch {
		case line == "":
			line = "  - " + w
		case len(line)+1+len(w) > width:
			b.WriteString("//" + " " + line + "\n")
			line = "    " + w
		default:
			line += " " + w
		}
	}
	b.WriteString("// " + line + "\n")
	return b.String()
}

// firstSentence is the doc's first sentence, on one line.
func firstSentence(doc string) string {
	para, _, _ := strings.Cut(doc, "\n\n")
	para = strings.Join(strings.Fields(para), " ")
	for i := 0; i+1 < len(para); i++ {
		if para[i] == '.' && para[i+1] == ' ' && i+2 < len(para) && para[i+2] >= 'A' && para[i+2] <= 'Z' {
			return para[:i+1]
		}
	}
	return para
}

// The lines between which a README holds its Config table.
const (
	tableBegin = "<!-- configdoc: the Config table, written by .github/tools/configdoc -->\n"
	tableEnd   = "<!-- configdoc: end -->\n"
)

// Table returns readme with the table between its markers written from fields, the types with the type
// arguments of the first adapter (dirs[0], Fiber v2's) and, in a note where they differ, of the others (v3,
// net/http), named after their directory's first part.
func Table(readme []byte, fields []Field, params []string, dirs []string, args [][]string) ([]byte, error) {
	s := string(readme)
	i, j := strings.Index(s, tableBegin), strings.Index(s, tableEnd)
	if i < 0 || j < i {
		return nil, fmt.Errorf("no %q ... %q", strings.TrimSpace(tableBegin), strings.TrimSpace(tableEnd))
	}
	cell := func(v string) string { return strings.ReplaceAll(v, "|", "\\|") }
	var b strings.Builder
	b.WriteString("| Property | Type | Description | Default |\n|---|---|---|---|\n")
	for _, f := range fields {
		first := substitute(f.Type, params, args[0])
		typ := "`" + cell(first) + "`"
		var notes []string
		for i := 1; i < len(args); i++ {
			if other := substitute(f.Type, params, args[i]); other != first {
				kind, _, _ := strings.Cut(filepath.ToSlash(dirs[i]), "/")
				if kind == "nethttp" {
					kind = "net/http"
				}
				notes = append(notes, kind+": `"+cell(other)+"`")
			}
		}
		if len(notes) > 0 {
			typ += " (" + strings.Join(notes, "; ") + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", f.Name, typ, cell(f.Summary), cell(f.Default))
	}
	return []byte(s[:i+len(tableBegin)] + b.String() + s[j:]), nil
}

// TypeArgs returns the type arguments of an adapter's Config alias.
func TypeArgs(src []byte) ([]string, error) {
	loc := aliasRe.FindSubmatchIndex(src)
	if loc == nil {
		return nil, fmt.Errorf("no `type Config = core.Config[...]` line")
	}
	return splitArgs(string(src[loc[4]:loc[5]])), nil
}
