package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRunFlagsVSphere: the --vsphere-* flags reach the options, the defaults are off and safe,
// and options that cannot work are refused naming the flag.
func TestRunFlagsVSphere(t *testing.T) {
	base := []string{"--state-namespace=x", "--enable-vsphere", "--vsphere-url=https://vcenter.example.com",
		"--vsphere-credentials-file=/secrets/vsphere", "--vsphere-datacenter=DC0", "--vsphere-folders=labs, /DC0/vm/ci"}
	for _, tc := range []struct {
		name string
		args []string
		err  string
	}{
		{name: "observer mode needs no quarantine folder", args: base},
		{name: "direct mode with a quarantine folder", args: append(slices.Clone(base), "--mode=direct", "--vsphere-quarantine-folder=quarantine")},
		{name: "direct mode without a quarantine folder", args: append(slices.Clone(base), "--mode=direct"), err: "needs --vsphere-quarantine-folder"},
		{name: "no URL", args: append(slices.Clone(base), "--vsphere-url="), err: "needs --vsphere-url"},
		{name: "credentials in the URL", args: append(slices.Clone(base), "--vsphere-url=https://root:pw@vcenter"), err: "not the URL"},
		{name: "no credentials", args: append(slices.Clone(base), "--vsphere-credentials-file="), err: "needs --vsphere-credentials-file"},
		{name: "no folders", args: append(slices.Clone(base), "--vsphere-folders="), err: "needs --vsphere-folders"},
		{name: "insecure and a CA", args: append(slices.Clone(base), "--vsphere-insecure", "--vsphere-ca-file=/ca.pem"), err: "choose one"},
		{name: "expiry off", args: append(slices.Clone(base), "--enable-expiry=false"), err: "needs --enable-expiry"},
		{name: "no interval", args: append(slices.Clone(base), "--vsphere-crawl-interval=0s"), err: "--vsphere-crawl-interval=0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _, _, err := runFlags(tc.args, &bytes.Buffer{})
			if err == nil {
				err = o.Validate()
			}
			if tc.err == "" && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
			if strings.Contains(tc.args[len(tc.args)-1], "pw@") && strings.Contains(err.Error(), "pw") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
	o, _, _, err := runFlags(append(slices.Clone(base), "--vsphere-ignore=golden,/DC0/vm/infra"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	v := o.VSphere
	if !v.Enabled || v.Config.URL != "https://vcenter.example.com" || v.Config.Datacenter != "DC0" || v.CrawlInterval != 10*time.Minute ||
		!slices.Equal(v.Config.Folders, []string{"labs", "/DC0/vm/ci"}) || !slices.Equal(v.Config.Ignore, []string{"golden", "/DC0/vm/infra"}) || v.Config.Insecure {
		t.Errorf("vSphere options: %+v", v)
	}
	d, _, _, _ := runFlags([]string{"--state-namespace=x"}, &bytes.Buffer{})
	if d.VSphere.Enabled || d.VSphere.Config.Insecure || d.VSphere.CrawlInterval != 10*time.Minute {
		t.Errorf("vSphere defaults: %+v", d.VSphere)
	}
}
