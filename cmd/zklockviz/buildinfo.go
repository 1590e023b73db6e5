package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zklockviz/zklockviz/internal/buildinfo"
)

// buildInfoMetric is zklockviz_build_info{version,revision,goversion} 1,
// the usual Prometheus way to say which build a target runs: a dashboard
// joins it on the target's series, an alert finds two builds in one fleet.
func buildInfoMetric(info buildinfo.Info) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "zklockviz_build_info",
		Help: "Always 1; the labels say which build of zklockviz runs (zklockviz version).",
		ConstLabels: prometheus.Labels{
			"version":   info.Version,
			"revision":  info.Revision,
			"goversion": info.GoVersion,
		},
	}, func() float64 { return 1 })
}
