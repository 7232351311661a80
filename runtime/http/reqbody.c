/*
 * Request bodies the server does not read by Content-Length into a buffer
 * (runtime/http/conn.h): chunked ones (decoded by runtime/http/chunked.c,
 * then read whole into the body like a Content-Length one, in BODY), and
 * streamed ones (a route's on_body, include/vireo/http.h, in APP: the
 * handler already has the request). One loop serves both: the body's next
 * span from rx[], its cap (the route's max_body, or its body_limit), a
 * taker (the body buffer, or on_body, which may take less: back-pressure,
 * the rest stays in rx[] and the window closes), and the end (the handler,
 * or on_body_end). Cold: uploads are not the static site's path, and an
 * image whose routes take no body does not link this file at all
 * (vireo_http_route() in vireo/http.h calls vireo_http_bodies() only for
 * a route with max_body or on_body; the server calls through reqbody).
 */
#include "lib/types.h"
#include "runtime/http/conn.h"

static void reqbody_stream_start(struct conn *c, const struct api_route *rt)
{
	const struct http_req_parser *p = &c->b->parser;

	if (rt->r.body_limit && p->content_length > rt->r.body_limit) {
		api_http_stats.body_too_large++;
		server_respond_error(c, 413, p->method == HTTP_METHOD_HEAD);
		return;
	}
	c->route = rt;
	c->body_stream = true;
	c->body_paused = false;
	c->body_seen = 0;
	chunked_init(&c->dechunk);
	exchange_dispatch(c);
}

/* n bytes at data into the buffered body: all of it, or 0 when a share,
 * the budget or the heap refuses (exchange_body_room()). */
static size_t reqbody_copy(struct conn *c, const u8 *data, size_t n)
{
	if (!exchange_body_room(c, (u32)n))
		return 0;
	__builtin_memcpy(c->req_body + c->req_body_len, data, n);
	c->req_body_len += (u32)n;
	return n;
}

static int reqbody_pump(struct conn *c)
{
	struct tcpconn *tc = &c->tc;
	const struct vireo_route *rt = &c->route->r;
	/* SEND with body_stream: a tunnel (vireo_resp_upgrade()), its
	 * bytes raw to on_body until the client's FIN, uncapped */
	bool tunnel = c->state == C_SEND, stream = c->state == C_APP || tunnel;
	u64 cap = tunnel ? 0 : stream ? rt->body_limit : c->req_body_need;
	size_t used, avail, took;
	int r, err = 0;

	while (stream ? c->state == (tunnel ? C_SEND : C_APP) && c->body_stream && !c->body_paused && c->xid :
			c->state == C_BODY) {
		const u8 *at = tc->rx + tc->rx_off;
		u32 held = tcpconn_rx_held(tc);

		if (c->b->parser.chunked) {
			r = chunked_step(&c->dechunk, at, held, &used, &avail);
			tcpconn_rx_consume(tc, (u32)used);
			at += used;
			if (r == CHUNKED_ERROR) {
				err = 400;
				break;
			}
			if (r == CHUNKED_MORE)
				return 0;
			if (r == CHUNKED_END)
				c->req_left = 0;
		} else if (tunnel) {
			avail = held;
			if (!avail && !tc->rx_eof)
				return 0;
		} else {
			avail = (size_t)MIN((u64)held, c->req_left);
			if (!avail && c->req_left)
				return 0;
		}
		if (!avail) {	/* the end */
			if (!stream) {
				exchange_dispatch(c);
				return 1;
			}
			c->body_stream = false;
			if (rt->on_body_end) {
				c->in_handler = true;
				rt->on_body_end((vireo_req){ c->xid }, rt->arg);
				c->in_handler = false;
			}
			return 1;
		}
		if ((cap || !stream) && avail > cap - (stream ? c->body_seen : c->req_body_len)) {
			api_http_stats.body_too_large++;
			err = 413;
			break;
		}
		if (stream) {
			c->in_handler = true;
			took = rt->on_body((vireo_req){ c->xid }, at, avail, rt->arg);
			c->in_handler = false;
			if (took > avail) {
				api_misuse("on_body: took %zu of %zu: counted as all", took, avail);
				took = avail;
			}
		} else if (!(took = reqbody_copy(c, at, avail))) {
			err = 503;
			break;
		}
		if (c->b->parser.chunked)
			chunked_take(&c->dechunk, took);
		else if (!tunnel)
			c->req_left -= took;
		tcpconn_rx_consume(tc, (u32)took);
		c->body_seen += took;
		if (stream && took)
			c->t_app = tcpconn_now_ms();
		if (took < avail)
			c->body_paused = true;
	}
	if (!err)
		return stream && c->state != C_APP && !tunnel;
	c->body_stream = false;
	exchange_end(c, false);
	exchange_release(c);
	server_respond_error(c, err, c->b->parser.method == HTTP_METHOD_HEAD);
	return 1;
}

static const struct reqbody_ops reqbody_linked = { reqbody_stream_start, reqbody_pump };

void vireo_http_bodies(void)
{
	reqbody = &reqbody_linked;
}

void vireo_req_body_resume(vireo_req r)
{
	struct conn *c = api_handle_get(API_H_REQ, r.id);

	if (c && c->body_paused) {
		c->body_paused = false;
		server_kick(c);
	}
}
