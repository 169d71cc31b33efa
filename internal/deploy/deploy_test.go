package deploy

import (
	"bufio"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/brainwire/brainwire/bench/load"
)

// root is the repository's root directory.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string
}

func parseDockerfile(t *testing.T, text string) []instruction {
	t.Helper()
	var out []instruction
	var cur strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			cur.WriteString(strings.TrimSuffix(line, `\`) + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		out = append(out, instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// stages splits the instructions by FROM.
func stages(ins []instruction) [][]instruction {
	var out [][]instruction
	for _, in := range ins {
		if in.cmd == "FROM" {
			out = append(out, nil)
		}
		if len(out) > 0 {
			out[len(out)-1] = append(out[len(out)-1], in)
		}
	}
	return out
}

// envOf reads the ENV instructions of a stage (KEY=VALUE pairs).
func envOf(stage []instruction) map[string]string {
	env := map[string]string{}
	for _, in := range stage {
		if in.cmd != "ENV" {
			continue
		}
		for _, kv := range strings.Fields(in.args) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = strings.Trim(v, `"`)
			}
		}
	}
	return env
}

func execForm(t *testing.T, what, args string) []string {
	t.Helper()
	var argv []string
	if err := json.Unmarshal([]byte(args), &argv); err != nil {
		t.Fatalf("%s %s is not in exec form (a JSON array): the image has no shell to run it", what, args)
	}
	return argv
}

// image is what the Dockerfile's final stage says the container is.
type image struct {
	binary  string
	env     map[string]string
	user    string
	health  []string
	expose  []string
	entry   []string
	command []string
}

// checkDockerfile checks the Dockerfile, as the compose tests read it.
func checkDockerfile(t *testing.T) image {
	t.Helper()
	st := stages(parseDockerfile(t, read(t, "Dockerfile")))
	if len(st) != 2 {
		t.Fatalf("%d stages, want a build stage and the image", len(st))
	}
	build, final := st[0], st[1]

	// The build stage's Go is the version go.mod asks for.
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(read(t, "go.mod"))
	from := regexp.MustCompile(`^golang:(\d+\.\d+)[-\w.]*\s+AS\s+(\w+)$`).FindStringSubmatch(build[0].args)
	if goVersion == nil || from == nil || from[1] != goVersion[1] {
		t.Errorf("build stage FROM %q; go.mod wants go %v", build[0].args, goVersion)
	}
	var built string
	for _, in := range build {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			if !strings.Contains(in.args, "CGO_ENABLED=0") || !strings.Contains(in.args, "./cmd/brainwire") {
				t.Errorf("the build is not a static build of ./cmd/brainwire: %s", in.args)
			}
			if m := regexp.MustCompile(`-o (\S+)`).FindStringSubmatch(in.args); m != nil {
				built = m[1]
			}
		}
	}
	if built == "" {
		t.Fatal("no go build -o in the build stage")
	}

	img := image{env: envOf(final)}
	if !strings.HasPrefix(final[0].args, "gcr.io/distroless/static") || !strings.Contains(final[0].args, "nonroot") {
		t.Errorf("image base %q: want distroless static, nonroot", final[0].args)
	}
	for _, in := range final {
		switch in.cmd {
		case "COPY":
			f := strings.Fields(in.args)
			if slices.Contains(f, "--from="+from[2]) && f[len(f)-2] == built {
				img.binary = f[len(f)-1]
			}
		case "USER":
			img.user = in.args
		case "HEALTHCHECK":
			_, cmd, ok := strings.Cut(in.args, "CMD ")
			if !ok {
				t.Fatalf("HEALTHCHECK %s has no CMD", in.args)
			}
			img.health = execForm(t, "HEALTHCHECK", cmd)
		case "EXPOSE":
			img.expose = append(img.expose, strings.Fields(in.args)...)
		case "ENTRYPOINT":
			img.entry = execForm(t, "ENTRYPOINT", in.args)
		case "CMD":
			img.command = execForm(t, "CMD", in.args)
		}
	}
	if img.binary == "" {
		t.Fatalf("the image does not copy %s from the build stage", built)
	}
	if u, _, _ := strings.Cut(img.user, ":"); u == "" || u == "0" || u == "root" {
		t.Errorf("USER %q: the server must not run as root", img.user)
	}
	// The health check runs the binary's own probe: the base has no shell
	// or curl. The probe finds the server through BRAINWIRE_ADDR.
	if len(img.health) != 2 || img.health[0] != img.binary || img.health[1] != "health" {
		t.Errorf("HEALTHCHECK %q: want [%s health]", img.health, img.binary)
	}
	if !strings.Contains(read(t, "cmd/brainwire/main.go"), `{"health", `) {
		t.Error("the binary has no health command for the HEALTHCHECK")
	}
	if len(img.entry) != 1 || img.entry[0] != img.binary || !slices.Equal(img.command, []string{"serve"}) {
		t.Errorf("ENTRYPOINT %q CMD %q: want [%s] [serve]", img.entry, img.command, img.binary)
	}
	host, port, err := net.SplitHostPort(img.env["BRAINWIRE_ADDR"])
	if err != nil || host != "0.0.0.0" || !slices.Contains(img.expose, port) {
		t.Errorf("BRAINWIRE_ADDR %q, EXPOSE %v: the server must listen on every interface, on the exposed port", img.env["BRAINWIRE_ADDR"], img.expose)
	}
	// The load figures in bench/RESULTS.md are the server's as the image
	// runs it.
	if img.env["GODEBUG"] != load.ImageGODEBUG {
		t.Errorf("GODEBUG %q: bench/load runs the server with %q", img.env["GODEBUG"], load.ImageGODEBUG)
	}
	if img.env["BRAINWIRE_DATA_DIR"] == "" {
		t.Error("no BRAINWIRE_DATA_DIR: the data would go to the working directory")
	}

	// The build context leaves out what the image does not need.
	ignore := strings.Fields(read(t, ".dockerignore"))
	for _, p := range []string{".git", "testenv/node_modules", "data"} {
		if !slices.Contains(ignore, p) {
			t.Errorf(".dockerignore does not leave out %s", p)
		}
	}
	return img
}

// TestComposeFile loads docker-compose.yml with compose-go, the Compose
// specification's reference loader (schema, interpolation, consistency),
// and checks the brainwire service against the image and the collector.
// loadCompose loads docker-compose.yml as docker compose does with
// --profile for each of profiles.
func loadCompose(t *testing.T, profiles ...string) *types.Project {
	t.Helper()
	dir := root(t)
	opts, err := cli.NewProjectOptions([]string{filepath.Join(dir, "docker-compose.yml")},
		cli.WithWorkingDirectory(dir), cli.WithName("brainwire"), cli.WithEnv(nil), cli.WithProfiles(profiles))
	if err != nil {
		t.Fatal(err)
	}
	project, err := opts.LoadProject(t.Context())
	if err != nil {
		t.Fatalf("docker-compose.yml does not load: %v", err)
	}
	return project
}

// `docker compose up -d` starts the telemetry backends alone: a server
// run from source beside them (the README's telemetry instructions) finds
// its port free. The brainwire profile adds the server.
func TestComposeDefaultLeavesTheServerPort(t *testing.T) {
	img := checkDockerfile(t)
	_, port, _ := net.SplitHostPort(img.env["BRAINWIRE_ADDR"])
	project := loadCompose(t)
	if _, on := project.Services["brainwire"]; on {
		t.Error("docker compose up starts the brainwire service")
	}
	for name, svc := range project.Services {
		for _, p := range svc.Ports {
			if p.Published == port {
				t.Errorf("%s publishes %s, the port go run ./cmd/brainwire serve listens on", name, port)
			}
		}
	}
	readme := read(t, "README.md")
	for _, want := range []string{"`docker compose up -d`", "docker compose --profile brainwire up -d --build"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not say %q", want)
		}
	}
}

func TestComposeFile(t *testing.T) {
	dir := root(t)
	project := loadCompose(t, "brainwire")
	for _, name := range []string{"brainwire", "otel-collector", "jaeger", "tempo", "prometheus", "grafana"} {
		if _, ok := project.Services[name]; !ok {
			t.Errorf("no %s service", name)
		}
	}
	// Every file a service mounts exists.
	for name, svc := range project.Services {
		for _, v := range svc.Volumes {
			if v.Type == types.VolumeTypeBind {
				if _, err := os.Stat(v.Source); err != nil {
					t.Errorf("%s mounts %s: %v", name, v.Source, err)
				}
			}
		}
	}

	img := checkDockerfile(t)
	bw := project.Services["brainwire"]
	if bw.Build == nil || bw.Build.Context != dir || bw.Build.Dockerfile != "Dockerfile" {
		t.Errorf("brainwire builds %+v: want the Dockerfile at the root", bw.Build)
	}
	// Traces and metrics go to the collector, on the port it listens on.
	endpoint := bw.Environment["OTEL_EXPORTER_OTLP_ENDPOINT"]
	if endpoint == nil {
		t.Fatal("brainwire has no OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	u, err := url.Parse(*endpoint)
	if err != nil || u.Scheme != "http" || u.Hostname() != "otel-collector" {
		t.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT %q: want http://otel-collector:<grpc port>", *endpoint)
	}
	if !strings.Contains(read(t, "dashboards/otel-collector.yaml"), "endpoint: 0.0.0.0:"+u.Port()) {
		t.Errorf("the collector does not listen on %s", u.Port())
	}
	if _, ok := bw.DependsOn["otel-collector"]; !ok {
		t.Error("brainwire does not depend on otel-collector")
	}
	// The published port is the one the image listens on; the data
	// directory is a volume.
	_, port, _ := net.SplitHostPort(img.env["BRAINWIRE_ADDR"])
	published := false
	for _, p := range bw.Ports {
		published = published || (p.Published == port && strconv.FormatUint(uint64(p.Target), 10) == port)
	}
	if !published {
		t.Errorf("brainwire ports %+v do not publish %s", bw.Ports, port)
	}
	mounted := false
	for _, v := range bw.Volumes {
		mounted = mounted || (v.Type == types.VolumeTypeVolume && v.Target == img.env["BRAINWIRE_DATA_DIR"])
	}
	if !mounted {
		t.Errorf("no volume on %s", img.env["BRAINWIRE_DATA_DIR"])
	}
	if keys := bw.Environment["BRAINWIRE_API_KEYS"]; keys == nil {
		t.Error("BRAINWIRE_API_KEYS is not passed through")
	}
}
