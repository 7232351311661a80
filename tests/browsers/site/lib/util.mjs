// The second module of the graph: app.mjs imports it by a relative URL.
export const answer = () => 6 * 7;
export const OK = "rgb(18, 52, 86)";	/* #123456: only when every check passed */

export function once(el, name, ms) {
	return new Promise((resolve, reject) => {
		const t = setTimeout(() => reject(new Error(name + " timed out")), ms);
		el.addEventListener(name, () => { clearTimeout(t); resolve(); }, { once: true });
		el.addEventListener("error", () => { clearTimeout(t); reject(new Error(name + ": error")); },
				    { once: true });
	});
}
