/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cu_graph.cu — a CPI as one CUDA graph.
 *
 * Queued call by call, a CPI costs the host about 35 runtime calls
 * (memset, events, per chunk a copy, four kernels, two FFTs and a copy
 * back), and the GPU, which starts at ev_start, waits for the calls still
 * to come: whenever the host runs slow (a shared VM's vCPUs do, for
 * stretches) that wait lands in the CPI's latency. A graph is launched in
 * one call and runs without the host. So a CPI whose buffers are both in
 * registered host memory runs as one CUDA graph per set and layout:
 * captured from the same calls (cu_enqueue) the first time that set and
 * layout meet such a CPI (once; the first CPIs after a start or reload
 * pay for it), then per CPI only the chunks' copy addresses are set
 * (cudaGraphExecMemcpyNodeSetParams1D, host-side) and the graph is
 * launched: 2 x chunks + 1 calls.
 *
 * Modes: one graph per set and layout serves every mode. Its multiply
 * nodes (one a chunk, found at capture: cu_enqueue) take the filter as a
 * kernel argument; when a CPI's mode differs from the one the graph
 * holds, that argument is re-pointed into d_filts
 * (cudaGraphExecKernelNodeSetParams, host-side, one call a chunk), which
 * leaves launches already queued alone. A graph per mode and layout would
 * cost up to 64 times the capture time and graph memory to save those
 * calls (bench_gpu's mode-switch column measures what they cost).
 *
 * The radar chain (cu_radar.cu) is captured with the rest: it runs on the
 * set's stream after the join, so the graph holds its kernels, its
 * Doppler FFT and its copies back of the map (map modes) and of the
 * detection list, which are re-pointed per CPI as the chunks' copies are.
 * Nothing in it depends on the mode but the multiply: the list's mode is
 * written by the host when the CPI completes (cu_radar_stamp).
 *
 * Beams by chunk (cu_beams.cu): a chunk's input copy is 2-D, which a
 * graph's copy node cannot take new addresses for, so that graph holds
 * no input copy: the host queues them before the launch and the graph
 * waits for each (cu_graph_launch_beams); its weights and monopulse
 * kernels take the CPI's pointing as the multiply takes the filter.
 *
 * A CPI with a map snapshot is launched as a graph too: the snapshot's
 * kernel and copy are never captured (the live view asks for one at most
 * fps times a second); they follow the launch on the set's stream, and the
 * CPI completes at their event (cu_pipeline.cu). Staged CPIs (a staged
 * detection list too), device buffers and an injected fault take the
 * call-by-call path. If a graph cannot be made or a CPI's addresses (or filter) are
 * refused, chirpd says so once and every later CPI takes that path
 * (tune.cuda_graphs = 0 asks for it from the start). pc_info.graph_cpis
 * counts the CPIs launched as graphs. Figures: doc/cuda.md, *CUDA graphs*.
 */
#include "cu_private.h"
#include "cu_beam.h"

#include <limits.h>
#include <math.h>
extern "C" {
#include "log.h"
}

#define CU_GRAPH_MAX_NODES 1024

int cu_graph_ok(const struct cu_be *be, const struct cu_set *s, int li, int staged,
		int on_device)
{
	/* beams: by chunk only (formed whole, MVDR's solve and the stage's
	 * copy are not re-pointed per CPI) */
	return be->graphs && (!be->bm || cu_beams_by_chunk(be, 0)) && !staged && !on_device &&
	       !be->fault_armed && s->g_state[li] >= 0;
}

/* Graphs off for good, said once: the first len bytes of call (len < 0:
 * all of it, as printf's precision) failed with what. */
static void cu_graphs_off(struct cu_be *be, const char *call, int len, const char *what)
{
	(void)cudaGetLastError();   /* a failed capture's error is not the next call's */
	be->graphs = 0;
	log_warn("cuda: %.*s: %s; CPIs are queued call by call from now on", len, call, what);
}

/* Capture set s's CPI in layout li, with filter filt, into a graph. NULL
 * (graphs off) if the capture failed. */
static cudaGraph_t cu_capture(struct cu_be *be, struct cu_set *s, int li, unsigned filt,
			      const void *in, const struct cu_dst *dst)
{
	struct cu_err ce = { NULL, NULL, 0 };
	struct cu_dst d = *dst;
	cudaGraph_t g = NULL;
	cudaError_t e;
	int rc;

	d.snap = NULL;   /* never in the graph: it follows the launch (cu_pipeline.cu) */
	e = cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal);
	if (e != cudaSuccess) {
		cu_graphs_off(be, "cudaStreamBeginCapture", -1, cudaGetErrorString(e));
		return NULL;
	}
	rc = cu_enqueue(be, s, li, filt, in, in, &d, 0, 1, &ce);
	e = cudaStreamEndCapture(s->stream, &g);   /* always: the stream leaves capture */
	if (rc < 0 || e != cudaSuccess) {
		if (g)
			(void)cudaGraphDestroy(g);
		if (rc < 0)
			cu_graphs_off(be, ce.call, ce.len, ce.what);
		else
			cu_graphs_off(be, "cudaStreamEndCapture", -1, cudaGetErrorString(e));
		return NULL;
	}
	return g;
}

/* Where the radar chain's map output leaves from (map modes). */
static const void *cu_map_src(const struct cu_be *be, const struct cu_set *s)
{
	return be->out_mode == PC_OUT_MAP_DB ? s->d_out : (const void *)s->r.d_map;
}

/* The copies set s's graph for layout li holds that take per-CPI
 * addresses: per chunk its input, per chunk its output (a cube), the
 * map's (a map mode) and the detection list's (cfar). */
static unsigned cu_graph_copies(const struct cu_be *be, int li)
{
	unsigned nc = be->lay[li].nchunks;

	return (be->bm ? 0 : nc) + (be->cube_out ? nc : 0) + (be->rs && !be->cube_out && be->out_bytes ? 1 : 0) +
	       (be->det_bytes ? 1 : 0);
}

/* The nodes cu_find_copies must find in set s's graph for layout li: its
 * copies, and with beams the weights and (with a list) monopulse kernels. */
static unsigned cu_graph_nodes(const struct cu_be *be, int li)
{
	return cu_graph_copies(be, li) + (be->bm ? 1u + (be->det_bytes ? 1u : 0u) : 0u);
}

/* g's copy (sp -> dp) if it is the radar chain's map or list copy back:
 * kept in s->g_map[li] / g_det[li]; 1 if it was one of them. */
static int cu_find_radar_copy(const struct cu_be *be, struct cu_set *s, int li,
			      const struct cu_dst *dst, cudaGraphNode_t node, const char *sp,
			      const char *dp)
{
	if (!be->rs)
		return 0;
	if (!be->cube_out && be->out_bytes && sp == (const char *)cu_map_src(be, s) &&
	    dp == (const char *)dst->out) {
		s->g_map[li] = node;
		return 1;
	}
	if (be->det_bytes && sp == (const char *)s->r.d_det && dp == (const char *)dst->det) {
		s->g_det[li] = node;
		return 1;
	}
	return 0;
}

/* A kernel node of a beams graph: kept in s->g_bw[li] / g_bmono[li] (and
 * counted in *found) if it makes the weights or the monopulse. A library's
 * kernel (cuFFT's) has no function the runtime knows, and says so with
 * cudaErrorInvalidDeviceFunction: not one of ours. */
static cudaError_t cu_find_beam_node(struct cu_set *s, int li, cudaGraphNode_t node,
				     unsigned *found)
{
	struct cudaKernelNodeParams p;
	cudaError_t e = cudaGraphKernelNodeGetParams(node, &p);

	if (e == cudaErrorInvalidDeviceFunction) {
		(void)cudaGetLastError();
		return cudaSuccess;
	}
	if (e != cudaSuccess)
		return e;
	switch (cu_beam_node_kind(p.func)) {
	case CU_BEAM_NODE_WEIGHTS:
		s->g_bw[li] = node;
		(*found)++;
		break;
	case CU_BEAM_NODE_MONO:
		s->g_bmono[li] = node;
		(*found)++;
		break;
	default:
		break;
	}
	return cudaSuccess;
}

/*
 * Find each chunk's input and output copy among g's nodes (by their
 * addresses: in/out and the set's d_in/d_out at the chunk's offsets) into
 * s->g_h2d[li] / g_d2h[li], and the radar chain's (cu_find_radar_copy).
 * *n: the nodes in g; *found: copies matched.
 */
static cudaError_t cu_find_copies(struct cu_be *be, struct cu_set *s, int li, cudaGraph_t g,
				  const void *in, const struct cu_dst *dst, size_t *n,
				  unsigned *found)
{
	void *out = dst->out;
	const struct chunk_layout *lay = &be->lay[li];
	cudaGraphNode_t nodes[CU_GRAPH_MAX_NODES];
	cudaError_t e;

	*n = 0;
	*found = 0;
	e = cudaGraphGetNodes(g, NULL, n);
	if (e == cudaSuccess && *n > CU_GRAPH_MAX_NODES)
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess)
		e = cudaGraphGetNodes(g, nodes, n);
	for (size_t k = 0; e == cudaSuccess && k < *n; k++) {
		enum cudaGraphNodeType t;
		struct cudaMemcpy3DParms p;
		const char *sp, *dp;

		e = cudaGraphNodeGetType(nodes[k], &t);
		if (e == cudaSuccess && t == cudaGraphNodeTypeKernel && be->bm) {
			e = cu_find_beam_node(s, li, nodes[k], found);
			continue;
		}
		if (e != cudaSuccess || t != cudaGraphNodeTypeMemcpy)
			continue;
		e = cudaGraphMemcpyNodeGetParams(nodes[k], &p);
		if (e != cudaSuccess)
			break;
		sp = (const char *)p.srcPtr.ptr + p.srcPos.x;
		dp = (const char *)p.dstPtr.ptr + p.dstPos.x;
		if (cu_find_radar_copy(be, s, li, dst, nodes[k], sp, dp)) {
			(*found)++;
			continue;
		}
		for (unsigned i = 0; i < lay->nchunks; i++) {
			size_t r0, ioff, ooff;

			(void)cu_chunk(be, lay, i, &r0, &ioff, &ooff);
			if (sp == (const char *)in + ioff && dp == (const char *)s->d_in + ioff) {
				s->g_h2d[li][i] = nodes[k];
				(*found)++;
			} else if (be->cube_out && sp == (const char *)s->d_out + ooff &&
				   dp == (const char *)out + ooff) {
				s->g_d2h[li][i] = nodes[k];
				(*found)++;
			}
		}
	}
	return e;
}

/* Capture set s's CPI in layout li with filter filt (the caller's
 * buffers: registered host memory) into s->g[li], find the copies that
 * take per-CPI addresses, instantiate. */
static void cu_make_graph(struct cu_be *be, struct cu_set *s, int li, unsigned filt,
			  const void *in, const struct cu_dst *dst)
{
	cudaGraph_t g;
	cudaGraphExec_t gx;
	size_t n = 0;
	unsigned found = 0;
	cudaError_t e;

	s->g_state[li] = -1;
	g = cu_capture(be, s, li, filt, in, dst);
	if (!g)
		return;
	s->g_bw[li] = NULL;
	s->g_bmono[li] = NULL;
	e = cu_find_copies(be, s, li, g, in, dst, &n, &found);
	if (e != cudaSuccess || found != cu_graph_nodes(be, li)) {
		(void)cudaGraphDestroy(g);
		cu_graphs_off(be, "finding a CPI graph's copies", -1,
			      e != cudaSuccess ? cudaGetErrorString(e) : "not each one once");
		return;
	}
	/* beams: launched beside the copies (cu_graph_launch), its kernels
	 * keep the priorities they were captured with (the chain ahead of
	 * the next CPI's chunks, as call by call) */
	e = cudaGraphInstantiateWithFlags(&gx, g, be->bm ? cudaGraphInstantiateFlagUseNodePriority
							 : 0);
	if (e != cudaSuccess) {
		(void)cudaGraphDestroy(g);
		cu_graphs_off(be, "cudaGraphInstantiate", -1, cudaGetErrorString(e));
		return;
	}
	s->g[li] = g;
	s->gx[li] = gx;
	s->g_filt[li] = filt;
	s->g_az[li] = dst->az_deg;
	s->g_el[li] = dst->el_deg;
	s->g_state[li] = 1;
	log_debug("cuda: set %u, layout %d: a CPI is one graph of %zu nodes",
		  (unsigned)(s - be->sets), li, n);
}

/*
 * Point the multiply nodes (fused: the kernel nodes) of set s's graph for
 * layout li at filter filt.
 * cudaSuccess, or the first refusal (g_filt then names no filter: the
 * graph is not launched again, graphs are off).
 */
static cudaError_t cu_graph_set_filter(struct cu_be *be, struct cu_set *s, int li, unsigned filt)
{
	const struct chunk_layout *lay = &be->lay[li];
	const float2 *f = be->d_filts + (size_t)filt * be->nfft;
	cudaError_t e = cudaSuccess;

	if (s->g_filt[li] == filt)
		return cudaSuccess;
	s->g_filt[li] = UINT_MAX;
	for (unsigned i = 0; i < lay->nchunks && e == cudaSuccess; i++) {
		size_t r0, ioff, ooff;
		unsigned nr = cu_chunk(be, lay, i, &r0, &ioff, &ooff);

		if (be->fused) {   /* the kernel node of the chunk, as captured */
			struct cu_fjob j;

			if (cu_fused_job(be, s, lay, i, be->bm != NULL, NULL, NULL, filt, &j) > 0)
				e = cu_fused_node_set(be, s->gx[li], s->g_mul[li][i], &j);
			continue;
		}
		e = cu_cmul_node_set(s->gx[li], s->g_mul[li][i], cu_fft_row(be, s, r0),
				     be->pitch_elems, (unsigned)be->nfft, nr, f);
	}
	if (e == cudaSuccess)
		s->g_filt[li] = filt;
	return e;
}

/* The radar chain's copies back in set s's graph for layout li, pointed
 * at this CPI's out and det. */
static cudaError_t cu_graph_radar_copies(struct cu_be *be, struct cu_set *s, int li,
					 const struct cu_dst *dst)
{
	cudaError_t e = cudaSuccess;

	if (!be->rs)
		return cudaSuccess;
	if (!be->cube_out && be->out_bytes)
		e = cudaGraphExecMemcpyNodeSetParams1D(s->gx[li], s->g_map[li], dst->out,
						       cu_map_src(be, s), be->out_bytes,
						       cudaMemcpyDefault);
	if (e == cudaSuccess && be->det_bytes)
		e = cudaGraphExecMemcpyNodeSetParams1D(s->gx[li], s->g_det[li], dst->det,
						       s->r.d_det, be->det_bytes, cudaMemcpyDefault);
	return e;
}

/*
 * The rest of a beams CPI's launch (by chunk; its multiply nodes already
 * hold its filter). Its graph has no input copy: a chunk's is 2-D (its
 * pulses of every channel), and a graph's copy takes new addresses only
 * when 1-D. So its weights and monopulse nodes take the CPI's pointing and
 * its list copy the CPI's list, then the host queues ev_start, each
 * chunk's copy and ev_copy on the set's stream, one after the other as
 * call by call, and ev_in after the last; the graph, launched on the first
 * chunk stream so as not to wait behind those copies, waits for each
 * chunk's ev_copy (captured as external events) and records ev_out. A
 * snapshot follows on the set's stream behind ev_out. 0, 1 (the graph
 * refused the pointing or the list: the caller queues the CPI call by
 * call) or -EIO.
 */
static int cu_graph_launch_beams(struct cu_be *be, struct cu_set *s, int li, const void *in,
				 const struct cu_dst *dst)
{
	const struct chunk_layout *lay = &be->lay[li];
	struct cu_err ce = { NULL, NULL, 0 };
	cudaError_t e = cudaSuccess;
	const char *call = NULL;

	if (s->g_az[li] != dst->az_deg || s->g_el[li] != dst->el_deg) {
		s->g_az[li] = NAN;   /* until both nodes hold it */
		e = cu_beams_graph_point(be, s, s->gx[li], s->g_bw[li], s->g_bmono[li], dst->az_deg,
					 dst->el_deg);
		if (e != cudaSuccess) {
			cu_graphs_off(be, "cudaGraphExecKernelNodeSetParams(pointing)", -1,
				      cudaGetErrorString(e));
			return 1;
		}
		s->g_az[li] = dst->az_deg;
		s->g_el[li] = dst->el_deg;
	}
	e = cu_graph_radar_copies(be, s, li, dst);
	if (e != cudaSuccess) {
		cu_graphs_off(be, "cudaGraphExecMemcpyNodeSetParams1D", -1, cudaGetErrorString(e));
		return 1;
	}
	if ((e = cudaEventRecord(s->ev_start, s->stream)) != cudaSuccess) {
		call = "cudaEventRecord(start)";
		goto fail;
	}
	for (unsigned i = 0; i < lay->nchunks; i++) {
		unsigned p0, np = cu_beams_pulses(be, lay, i, &p0);

		if (cu_beams_copy_chunk(be, s, in, in, 0, i, p0, np, &ce) < 0) {
			cu_fail_n(be, ce.call, (size_t)ce.len, ce.what);
			return -EIO;
		}
	}
	if ((e = cudaEventRecord(s->ev_in, s->stream)) != cudaSuccess)
		call = "cudaEventRecord(input)";
	else if ((e = cudaGraphLaunch(s->gx[li], s->cs[0].stream)) != cudaSuccess)
		call = "cudaGraphLaunch";
	else if (dst->snap && (e = cudaStreamWaitEvent(s->stream, s->ev_out, 0)) != cudaSuccess)
		call = "cudaStreamWaitEvent(output)";
	if (!call)
		return 0;
fail:
	cu_fail(be, call, cudaGetErrorString(e));
	return -EIO;
}

/*
 * Launch set s's graph for layout li with this CPI's buffers and filter
 * filt (made first if need be). 0 launched; 1 not (no graph, or its
 * copies refused the addresses or its multiply the filter: the caller
 * queues the CPI call by call); -EIO the launch failed (the backend has
 * failed, as any failed call).
 */
int cu_graph_launch(struct cu_be *be, struct cu_set *s, int li, unsigned filt, const void *in,
		    const struct cu_dst *dst)
{
	void *out = dst->out;
	const struct chunk_layout *lay = &be->lay[li];
	size_t in_sz = pc_format_sample_bytes(be->in_format);
	size_t out_sz = pc_output_sample_bytes(be->out_mode);
	cudaError_t e = cudaSuccess;

	if (s->g_state[li] == 0)
		cu_make_graph(be, s, li, filt, in, dst);
	if (s->g_state[li] != 1)
		return 1;
	e = cu_graph_set_filter(be, s, li, filt);
	if (e != cudaSuccess) {
		cu_graphs_off(be, "cudaGraphExecKernelNodeSetParams", -1, cudaGetErrorString(e));
		return 1;
	}
	if (be->bm) {
		int rc = cu_graph_launch_beams(be, s, li, in, dst);

		if (rc == 0)
			be->graph_cpis++;
		return rc;
	}
	for (unsigned i = 0; i < lay->nchunks && e == cudaSuccess; i++) {
		size_t r0, ioff, ooff, nr = cu_chunk(be, lay, i, &r0, &ioff, &ooff);

		e = cudaGraphExecMemcpyNodeSetParams1D(s->gx[li], s->g_h2d[li][i],
						       (char *)s->d_in + ioff,
						       (const char *)in + ioff, nr * be->R * in_sz,
						       cudaMemcpyDefault);
		if (e == cudaSuccess && be->cube_out)
			e = cudaGraphExecMemcpyNodeSetParams1D(s->gx[li], s->g_d2h[li][i],
							       (char *)out + ooff,
							       (const char *)s->d_out + ooff,
							       nr * be->R * out_sz, cudaMemcpyDefault);
	}
	if (e == cudaSuccess)
		e = cu_graph_radar_copies(be, s, li, dst);
	if (e != cudaSuccess) {
		cu_graphs_off(be, "cudaGraphExecMemcpyNodeSetParams1D", -1, cudaGetErrorString(e));
		return 1;
	}
	e = cudaGraphLaunch(s->gx[li], s->stream);
	if (e != cudaSuccess) {
		cu_fail(be, "cudaGraphLaunch", cudaGetErrorString(e));
		return -EIO;
	}
	be->graph_cpis++;
	return 0;
}

void cu_graph_free(struct cu_set *s)
{
	for (unsigned l = 0; l < CU_NLAY; l++)
		if (s->g_state[l] == 1) {
			(void)cudaGraphExecDestroy(s->gx[l]);
			(void)cudaGraphDestroy(s->g[l]);
		}
}
