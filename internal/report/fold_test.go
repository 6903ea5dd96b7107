package report

import "testing"

func TestFoldChartLabels(t *testing.T) {
	const header = "--- base/apps/Deployment/web/web\n+++ head/apps/Deployment/web/web\n"
	labelHunk := "@@ -6,7 +6,7 @@\n   labels:\n-    helm.sh/chart: web-1.3.0\n+    helm.sh/chart: web-1.4.0\n   name: web\n"
	imageHunk := "@@ -28,7 +28,7 @@\n-        image: web:1.4.2\n+        image: web:1.5.0\n"
	mixedHunk := "@@ -6,8 +6,8 @@\n-    helm.sh/chart: web-1.3.0\n+    helm.sh/chart: web-1.4.0\n-    app.kubernetes.io/version: 1.4.2\n+    app.kubernetes.io/version: 1.5.0\n"
	for _, tc := range []struct {
		name, in, want string
		folded         int
	}{
		{"label-only hunk folded", header + labelHunk + imageHunk, header + imageHunk, 1},
		{"only label hunks: nothing left", header + labelHunk, "", 1},
		{"a hunk with another change stays", header + mixedHunk, header + mixedHunk, 0},
		{"no hunks", "", "", 0},
		{"the label as context only", header + "@@ -1,3 +1,3 @@\n     helm.sh/chart: web-1.3.0\n-a: 1\n+a: 2\n", header + "@@ -1,3 +1,3 @@\n     helm.sh/chart: web-1.3.0\n-a: 1\n+a: 2\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n := foldChartLabels(tc.in)
			if got != tc.want || n != tc.folded {
				t.Fatalf("fold = %q, %d; want %q, %d", got, n, tc.want, tc.folded)
			}
		})
	}
}
