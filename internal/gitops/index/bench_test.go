package index

import (
	"fmt"
	"testing"
	"testing/fstest"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// benchRepo builds a repository of n YAML files: per team a kustomization, a quota file
// (ResourceQuota + LimitRange, namespace from the kustomization) and deployments with comments.
func benchRepo(n int) fstest.MapFS {
	fsys := fstest.MapFS{}
	const perTeam = 20
	for team := 0; len(fsys) < n; team++ {
		dir := fmt.Sprintf("clusters/prod/teams/team-%04d", team)
		res := "namespace: team-" + fmt.Sprint(team) + "\nresources:\n- quota.yaml\n"
		fsys[dir+"/quota.yaml"] = file(fmt.Sprintf(`# quota of team %d, managed by Kustos
apiVersion: v1
kind: ResourceQuota
metadata:
  name: compute
  labels: {team: "%d"}
spec:
  hard:
    requests.cpu: "10"   # raised by PR #12
    requests.memory: 20Gi
    limits.cpu: "20"
    limits.memory: 40Gi
    pods: "50"
---
apiVersion: v1
kind: LimitRange
metadata:
  name: defaults
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 512Mi}
`, team, team))
		for d := 0; d < perTeam-2 && len(fsys) < n-1; d++ {
			name := fmt.Sprintf("app-%02d", d)
			res += "- " + name + ".yaml\n"
			fsys[dir+"/"+name+".yaml"] = file(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
  labels:
    app: %s
spec:
  replicas: 2 # HPA takes over
  selector:
    matchLabels:
      app: %s
  template:
    metadata:
      labels:
        app: %s
    spec:
      containers:
        - name: main
          image: registry.example.com/%s:1.2.3
          ports:
            - containerPort: 8080
          resources:
            requests: {cpu: 100m, memory: 128Mi}
            limits: {cpu: "1", memory: 512Mi}
`, name, name, name, name, name))
		}
		fsys[dir+"/kustomization.yaml"] = file(res)
	}
	return fsys
}

func TestBenchRepo(t *testing.T) {
	fsys := benchRepo(10000)
	if len(fsys) != 10000 {
		t.Fatalf("%d files", len(fsys))
	}
	ix, err := Build(fsys, []string{"clusters/prod"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ix.Errors()) != 0 {
		t.Fatal(ix.Errors())
	}
	loc, err := ix.Locate(lifecycle.Target{Version: "v1", Kind: "ResourceQuota", Namespace: "team-321", Name: "compute"})
	if err != nil || loc.Path != "clusters/prod/teams/team-0321/quota.yaml" || loc.Doc != 0 {
		t.Fatalf("Locate = %+v, %v", loc, err)
	}
	t.Logf("%d files, %d objects", ix.Files(), ix.Documents())
}

func BenchmarkBuild10k(b *testing.B) {
	fsys := benchRepo(10000)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Build(fsys, []string{"clusters/prod/"}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLocate(b *testing.B) {
	ix, err := Build(benchRepo(10000), []string{"clusters/prod/"})
	if err != nil {
		b.Fatal(err)
	}
	t := lifecycle.Target{Version: "v1", Kind: "ResourceQuota", Namespace: "team-321", Name: "compute"}
	b.ResetTimer()
	for b.Loop() {
		if _, err := ix.Locate(t); err != nil {
			b.Fatal(err)
		}
	}
}
