package kustomize

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"sigs.k8s.io/kustomize/api/ifc"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/pkg/util"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

// editor applies Argo CD's `kustomize edit` sequence (util/kustomize/kustomize.go, Build) to a scratch copy of
// the application's kustomization file held in the overlay. Each step reproduces the matching command of
// kustomize v5.8.1 (sigs.k8s.io/kustomize/kustomize/v5 commands/edit/...): read, modify types.Kustomization,
// write back with kustfile's field order.
type editor struct {
	fs        *buildFS // cwd = application path
	appPath   string   // repository-relative
	validator ifc.Validator
	env       *v1alpha1.Env
}

// kustomizationFile mirrors kustfile.NewKustomizationFile's validate: exactly one recognised file name in the
// working directory, and it must not be a directory. It returns the resolved repository-relative path.
func (e *editor) kustomizationFile() (string, error) {
	var found []string
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if e.fs.Exists(n) {
			found = append(found, n)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("missing kustomization file '%s'", konfig.DefaultKustomizationFileName())
	case 1:
	default:
		return "", fmt.Errorf("found multiple kustomization files: %v", found)
	}
	if e.fs.IsDir(found[0]) {
		return "", fmt.Errorf("%s should be a file", found[0])
	}
	return e.fs.resolve(found[0])
}

// edit runs one `kustomize edit` command: read, change, write.
func (e *editor) edit(change func(*types.Kustomization) error) error {
	p, err := e.kustomizationFile()
	if err != nil {
		return err
	}
	data, err := e.fs.ReadFile(virtual(p))
	if err != nil {
		return err
	}
	var mf kustFile
	k, err := mf.read(data)
	if err != nil {
		return err
	}
	if err := change(k); err != nil {
		return err
	}
	out, err := mf.marshal(k)
	if err != nil {
		return err
	}
	e.fs.overlay[p] = out
	return nil
}

// apply runs Argo CD's edit sequence for opts, in Argo CD's order. It returns the commands Argo CD would have run,
// for error messages and tests.
func (e *editor) apply(opts *v1alpha1.ApplicationSourceKustomize) ([]string, error) {
	var cmds []string
	run := func(cmd string, change func(*types.Kustomization) error) error {
		cmds = append(cmds, cmd)
		if err := e.edit(change); err != nil {
			return fmt.Errorf("kustomize %s: %w", cmd, err)
		}
		return nil
	}
	if opts.NamePrefix != "" {
		if err := run("edit set nameprefix -- "+opts.NamePrefix, func(k *types.Kustomization) error {
			k.NamePrefix = opts.NamePrefix
			return nil
		}); err != nil {
			return cmds, err
		}
	}
	if opts.NameSuffix != "" {
		if err := run("edit set namesuffix -- "+opts.NameSuffix, func(k *types.Kustomization) error {
			k.NameSuffix = opts.NameSuffix
			return nil
		}); err != nil {
			return cmds, err
		}
	}
	if len(opts.Images) > 0 {
		args := make([]string, 0, len(opts.Images))
		for _, img := range opts.Images {
			// this allows using ${ARGOCD_APP_REVISION} (Argo CD substitutes before the edit)
			args = append(args, envsubst(e.env, string(img)))
		}
		if err := run("edit set image "+strings.Join(args, " "), func(k *types.Kustomization) error {
			return setImages(k, args)
		}); err != nil {
			return cmds, err
		}
	}
	if len(opts.Replicas) > 0 {
		args := make([]string, 0, len(opts.Replicas))
		for _, r := range opts.Replicas {
			count, err := r.GetIntCount()
			if err != nil {
				return cmds, err
			}
			args = append(args, fmt.Sprintf("%s=%d", r.Name, count))
		}
		if err := run("edit set replicas "+strings.Join(args, " "), func(k *types.Kustomization) error {
			return setReplicas(k, args)
		}); err != nil {
			return cmds, err
		}
	}
	if len(opts.CommonLabels) > 0 {
		labels := map[string]string{}
		for name, value := range opts.CommonLabels {
			labels[name] = envsubst(e.env, value)
		}
		o := addMetadata{kind: "label", force: opts.ForceCommonLabels, withoutSelector: opts.LabelWithoutSelector, includeTemplates: opts.LabelIncludeTemplates}
		if err := run("edit add label "+o.flags()+joinPairs(labels), func(k *types.Kustomization) error {
			return o.addLabels(k, labels, e.validator.MakeLabelValidator())
		}); err != nil {
			return cmds, err
		}
	}
	if len(opts.CommonAnnotations) > 0 {
		annotations := opts.CommonAnnotations
		if opts.CommonAnnotationsEnvsubst {
			annotations = map[string]string{}
			for name, value := range opts.CommonAnnotations {
				annotations[name] = envsubst(e.env, value)
			}
		}
		o := addMetadata{kind: "annotation", force: opts.ForceCommonAnnotations}
		if err := run("edit add annotation "+o.flags()+joinPairs(annotations), func(k *types.Kustomization) error {
			return o.addAnnotations(k, annotations, e.validator.MakeAnnotationValidator())
		}); err != nil {
			return cmds, err
		}
	}
	if opts.Namespace != "" {
		if err := run("edit set namespace -- "+opts.Namespace, func(k *types.Kustomization) error {
			if errs := e.validator.ValidateNamespace(opts.Namespace); len(errs) != 0 {
				return fmt.Errorf("%q is not a valid namespace name: %s", opts.Namespace, strings.Join(errs, ";"))
			}
			k.Namespace = opts.Namespace
			return nil
		}); err != nil {
			return cmds, err
		}
	}
	if len(opts.Patches) > 0 {
		cmds = append(cmds, "# kustomization.yaml updated with patches")
		if err := e.appendPatches(opts.Patches); err != nil {
			return cmds, err
		}
	}
	if len(opts.Components) > 0 {
		found := opts.Components
		if opts.IgnoreMissingComponents {
			found = nil
			for _, c := range opts.Components {
				// Argo CD stats filepath.Join(appPath, c) inside an os.Root of the checkout; anything that does
				// not exist there, escapes it or is a URL is skipped.
				if p, err := repofs.Join(e.appPath, c); err == nil && e.fs.repo.Exists(p) {
					found = append(found, c)
				} else if err == nil {
					e.fs.repo.Recorder().RecordDir(p) // its appearance would change the build
				}
			}
		}
		if len(found) > 0 {
			cmd := "edit add component " + strings.Join(found, " ")
			cmds = append(cmds, cmd)
			comps, err := e.globComponents(found)
			if err != nil {
				return cmds, fmt.Errorf("kustomize %s: %w", cmd, err)
			}
			if err := e.addComponents(comps); err != nil {
				return cmds, fmt.Errorf("kustomize %s: %w", cmd, err)
			}
		}
	}
	return cmds, nil
}

// appendPatches mirrors Argo CD's in-place rewrite: the kustomization is parsed as generic YAML, the application's
// patches appended to `patches` and the document marshalled again with sigs.k8s.io/yaml.
func (e *editor) appendPatches(patches v1alpha1.KustomizePatches) error {
	var p string
	for _, n := range konfig.RecognizedKustomizationFileNames() { // findKustomizeFile: first existing
		if e.fs.Exists(n) {
			r, err := e.fs.resolve(n)
			if err != nil {
				return err
			}
			p = r
			break
		}
	}
	if p == "" {
		return errors.New("kustomization file not found in the path")
	}
	b, err := e.fs.ReadFile(virtual(p))
	if err != nil {
		return fmt.Errorf("failed to load kustomization.yaml: %w", err)
	}
	var kustomization any
	if err := yaml.Unmarshal(b, &kustomization); err != nil {
		return fmt.Errorf("failed to unmarshal kustomization.yaml: %w", err)
	}
	kMap, ok := kustomization.(map[string]any)
	if !ok {
		return fmt.Errorf("expected kustomization.yaml to be type map[string]any, but got %T", kMap)
	}
	if existing, ok := kMap["patches"]; ok {
		list, ok := existing.([]any)
		if !ok {
			return fmt.Errorf("expected 'patches' field in kustomization.yaml to be []any, but got %T", existing)
		}
		for i := range patches {
			list = append(list, patches[i])
		}
		kMap["patches"] = list
	} else {
		kMap["patches"] = patches
	}
	out, err := yaml.Marshal(kMap)
	if err != nil {
		return fmt.Errorf("failed to marshal kustomization.yaml after adding patches: %w", err)
	}
	e.fs.overlay[p] = out
	return nil
}

// globComponents mirrors util.GlobPatternsWithLoader(fSys, NewFileLoaderAtCwd(fSys), patterns, false): each
// pattern's glob matches, else the pattern itself when a loader can be created for it (an existing directory;
// remote components, which kustomize would clone to validate, are refused).
func (e *editor) globComponents(patterns []string) ([]string, error) {
	var out []string
	for _, p := range patterns {
		files, err := e.fs.Glob(p)
		if err != nil {
			return nil, fmt.Errorf("error checking the filesystem: %w", err)
		}
		if len(files) != 0 {
			out = append(out, files...)
			continue
		}
		if isRemote(p) {
			return nil, &repofs.Refusal{Rule: RuleRemote, Path: p, Detail: "remote components are not fetched"}
		}
		if !e.fs.IsDir(p) {
			return nil, fmt.Errorf("%s has no match: must build at directory: not a valid directory", p)
		}
		out = append(out, p)
	}
	return out, nil
}

// addComponents mirrors addcomponent.RunAddComponent after the glob.
func (e *editor) addComponents(components []string) error {
	kf, err := e.kustomizationFile()
	if err != nil {
		return err
	}
	kfName := path.Base(kf)
	return e.edit(func(k *types.Kustomization) error {
		for _, c := range components {
			if c == kfName {
				continue
			}
			if slices.Contains(k.Components, c) {
				continue
			}
			k.Components = append(k.Components, c)
		}
		return nil
	})
}

// setImages mirrors setimage.go (Validate + RunSetImage), including its replace* helpers, which rebuild the
// image without tagSuffix.
func setImages(k *types.Kustomization, args []string) error {
	if len(args) == 0 {
		return errors.New("no image specified")
	}
	imageMap := map[string]types.Image{}
	for _, arg := range args {
		img, err := parseImage(arg)
		if err != nil {
			return err
		}
		imageMap[img.Name] = img
	}
	const preserve = "*"
	replaceNewName := func(i types.Image, v string) types.Image {
		return types.Image{Name: i.Name, NewName: v, NewTag: i.NewTag, Digest: i.Digest}
	}
	replaceNewTag := func(i types.Image, v string) types.Image {
		return types.Image{Name: i.Name, NewName: i.NewName, NewTag: v, Digest: i.Digest}
	}
	replaceDigest := func(i types.Image, v string) types.Image {
		return types.Image{Name: i.Name, NewName: i.NewName, NewTag: i.NewTag, Digest: v}
	}
	for _, im := range k.Images {
		if argIm, ok := imageMap[im.Name]; ok {
			if argIm.NewName == preserve {
				argIm = replaceNewName(argIm, im.NewName)
			}
			if argIm.NewTag == preserve {
				argIm = replaceNewTag(argIm, im.NewTag)
			}
			if argIm.Digest == preserve {
				argIm = replaceDigest(argIm, im.Digest)
			}
			imageMap[im.Name] = argIm
			continue
		}
		imageMap[im.Name] = im
	}
	images := make([]types.Image, 0, len(imageMap))
	for _, v := range imageMap {
		if v.NewName == preserve {
			v = replaceNewName(v, "")
		}
		if v.NewTag == preserve {
			v = replaceNewTag(v, "")
		}
		if v.Digest == preserve {
			v = replaceDigest(v, "")
		}
		images = append(images, v)
	}
	sort.Slice(images, func(i, j int) bool { return images[i].Name < images[j].Name })
	k.Images = images
	return nil
}

const errImageInvalidArgs = `invalid format of image, use one of the following options:
- <image>=<newimage>:<newtag>
- <image>=<newimage>@<digest>
- <image>=<newimage>:<newtag>@<digest>
- <image>=<newimage>
- <image>:<newtag>
- <image>:<newtag>@<digest>
- <image>@<digest>`

// parseImage mirrors setimage.parse.
func parseImage(arg string) (types.Image, error) {
	key, value := "", arg
	if s := strings.SplitN(arg, "=", 2); len(s) == 2 {
		key, value = s[0], s[1]
	}
	name, tag, digest := util.SplitImageName(value)
	if name == arg {
		return types.Image{}, errors.New(errImageInvalidArgs)
	}
	img := types.Image{NewTag: tag, Digest: digest}
	if key == "" {
		img.Name = name
	} else {
		img.Name = key
		img.NewName = name
	}
	return img, nil
}

// setReplicas mirrors setreplicas.go.
func setReplicas(k *types.Kustomization, args []string) error {
	replicaMap := map[string]types.Replica{}
	for _, arg := range args {
		s := strings.Split(arg, "=")
		if len(s) != 2 {
			return errors.New("invalid format of replica, use the following format: <name>=<count>")
		}
		count, err := strconv.ParseInt(s[1], 10, 64)
		if err != nil {
			return errors.New("invalid format of replica, use the following format: <name>=<count>")
		}
		replicaMap[s[0]] = types.Replica{Name: s[0], Count: count}
	}
	for _, r := range k.Replicas {
		if _, ok := replicaMap[r.Name]; !ok {
			replicaMap[r.Name] = r
		}
	}
	replicas := make([]types.Replica, 0, len(replicaMap))
	for _, r := range replicaMap {
		replicas = append(replicas, r)
	}
	sort.Slice(replicas, func(i, j int) bool { return replicas[i].Name < replicas[j].Name })
	k.Replicas = replicas
	return nil
}

// addMetadata mirrors addmetadata.go (edit add label / edit add annotation).
type addMetadata struct {
	kind             string // "label" or "annotation"
	force            bool
	withoutSelector  bool
	includeTemplates bool
}

func (o addMetadata) flags() string {
	var b strings.Builder
	if o.force {
		b.WriteString("--force ")
	}
	if o.withoutSelector {
		b.WriteString("--without-selector ")
	}
	if o.includeTemplates {
		b.WriteString("--include-templates ")
	}
	return b.String()
}

func joinPairs(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+":"+m[k])
	}
	return strings.Join(parts, " ")
}

// parse mirrors validateAndParse: Argo CD passes each pair as "k:v" (mapToEditAddArgs, kustomize >= 3.8.5),
// which kustomize splits at the first colon and unquotes (util.ConvertSliceToMap).
func (o addMetadata) parse(pairs map[string]string, validate func(map[string]string) error) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, fmt.Errorf("must specify %s", o.kind)
	}
	if !o.withoutSelector && o.includeTemplates {
		return nil, errors.New("--without-selector flag must be specified for --include-templates to work")
	}
	m := map[string]string{}
	for name, value := range pairs {
		input := name + ":" + value
		c := strings.Index(input, ":")
		if c == 0 {
			return nil, fmt.Errorf("invalid %s: '%s' (%s)", o.kind, input, "need k:v pair where v may be quoted")
		}
		v := input[c+1:]
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		m[input[:c]] = v
	}
	if err := validate(m); err != nil {
		return nil, err
	}
	return m, nil
}

func (o addMetadata) addAnnotations(k *types.Kustomization, pairs map[string]string, validate func(map[string]string) error) error {
	m, err := o.parse(pairs, validate)
	if err != nil {
		return err
	}
	if k.CommonAnnotations == nil {
		k.CommonAnnotations = map[string]string{}
	}
	return o.writeToMap(k.CommonAnnotations, m)
}

func (o addMetadata) addLabels(k *types.Kustomization, pairs map[string]string, validate func(map[string]string) error) error {
	m, err := o.parse(pairs, validate)
	if err != nil {
		return err
	}
	if o.withoutSelector {
		return o.writeToLabels(k, m)
	}
	if k.CommonLabels == nil {
		k.CommonLabels = map[string]string{}
	}
	return o.writeToMap(k.CommonLabels, m)
}

func (o addMetadata) writeToMap(dst, m map[string]string) error {
	for _, key := range sortedKeys(m) {
		if err := o.writeEntry(dst, key, m[key]); err != nil {
			return err
		}
	}
	return nil
}

func (o addMetadata) writeEntry(dst map[string]string, k, v string) error {
	if _, ok := dst[k]; ok && !o.force {
		return fmt.Errorf("%s %s already in kustomization file. Use --force to override", o.kind, k)
	}
	dst[k] = v
	return nil
}

// writeToLabels mirrors addMetadataOptions.writeToLabels: pairs go into the first `labels` entry with the same
// includeSelectors/includeTemplates settings, or a new entry appended once.
func (o addMetadata) writeToLabels(k *types.Kustomization, m map[string]string) error {
	lbl := types.Label{Pairs: map[string]string{}, IncludeSelectors: false, IncludeTemplates: o.includeTemplates}
	find := func() (int, bool) {
		for i, ml := range k.Labels {
			if ml.IncludeSelectors == lbl.IncludeSelectors && ml.IncludeTemplates == lbl.IncludeTemplates {
				return i, true
			}
		}
		return 0, false
	}
	for _, key := range sortedKeys(m) {
		if i, ok := find(); ok {
			if k.Labels[i].Pairs == nil {
				// kustomize panics writing into the nil map (assignment to entry in nil map); the edit fails.
				return fmt.Errorf("labels[%d] has no pairs: kustomize edit add label fails on it", i)
			}
			if err := o.writeEntry(k.Labels[i].Pairs, key, m[key]); err != nil {
				return err
			}
			continue
		}
		if err := o.writeEntry(lbl.Pairs, key, m[key]); err != nil {
			return err
		}
		k.Labels = append(k.Labels, lbl)
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// envsubst is v1alpha1.Env.Envsubst, tolerating a nil environment.
func envsubst(env *v1alpha1.Env, s string) string {
	if env == nil {
		return v1alpha1.Env{}.Envsubst(s)
	}
	return env.Envsubst(s)
}
