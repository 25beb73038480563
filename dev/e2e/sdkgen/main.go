// sdkgen writes the Node.js SDK of a Pulumi package schema with Pulumi's own code generator
// (pkg/v3/codegen/nodejs), the one `pulumi package gen-sdk --language nodejs` runs inside the Node.js
// language host, which the module proxy does not serve. Built by dev/e2e/toolchain.sh --extra sdkgen.
//
//	sdkgen SCHEMA.json OUT_DIR
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/blang/semver"
	"github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

// noDependencies loads nothing: the schema references no other package.
type noDependencies struct{}

func (noDependencies) LoadPackage(pkg string, _ *semver.Version) (*schema.Package, error) {
	return nil, fmt.Errorf("package %s: the schema may reference no other package", pkg)
}

func (noDependencies) LoadPackageV2(_ context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	return nil, fmt.Errorf("package %s: the schema may reference no other package", d.Name)
}

func (noDependencies) LoadPackageReference(pkg string, _ *semver.Version) (schema.PackageReference, error) {
	return nil, fmt.Errorf("package %s: the schema may reference no other package", pkg)
}

func (noDependencies) LoadPackageReferenceV2(
	_ context.Context, d *schema.PackageDescriptor,
) (schema.PackageReference, error) {
	return nil, fmt.Errorf("package %s: the schema may reference no other package", d.Name)
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: sdkgen SCHEMA.json OUT_DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "sdkgen:", err)
		os.Exit(1)
	}
}

func run(schemaPath, out string) error {
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		return err
	}
	var spec schema.PackageSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return err
	}
	pkg, diags, err := schema.BindSpec(spec, noDependencies{}, schema.ValidationOptions{})
	if err != nil {
		return err
	}
	if diags.HasErrors() {
		return diags
	}
	files, err := nodejs.GeneratePackage("sdkgen", pkg, nil, nil, true, noDependencies{})
	if err != nil {
		return err
	}
	for name, content := range files {
		path := filepath.Join(out, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return err
		}
	}
	return nil
}
