package instructions_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/instructions"
)

func TestDefault(t *testing.T) {
	d := instructions.Default()
	if !strings.Contains(d.Text, "file_capture") || !strings.Contains(d.Text, "transcribe_audio") || d.Source != "built-in" {
		t.Fatalf("%+v", d)
	}
	if len(d.Version) != len("sha256:")+12 || !strings.HasPrefix(d.Version, "sha256:") {
		t.Fatalf("version %q", d.Version)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.md"), filepath.Join(dir, "b.md")
	os.WriteFile(a, []byte("File captures."), 0o644)
	os.WriteFile(b, []byte("File captures!"), 0o644)
	ia, err := instructions.Load(a)
	if err != nil {
		t.Fatal(err)
	}
	ib, _ := instructions.Load(b)
	if ia.Text != "File captures." || ia.Source != a || ia.Version == ib.Version || ia.Version != instructions.New("File captures.", "x").Version {
		t.Fatalf("%+v %+v", ia, ib)
	}
	empty, big := filepath.Join(dir, "empty.md"), filepath.Join(dir, "big.md")
	os.WriteFile(empty, []byte(" \n"), 0o644)
	os.WriteFile(big, make([]byte, instructions.MaxSize+1), 0o644)
	for _, p := range []string{empty, big, filepath.Join(dir, "missing.md")} {
		if _, err := instructions.Load(p); err == nil {
			t.Errorf("%s loaded", p)
		}
	}
}
