// A static copy's answers to the page's API (`agent-eval view --export`): each answer is a script
// of its own under data/, loaded when the page asks for it, since a page opened from file:// may
// load scripts but not fetch() files. data/manifest.js says which file answers which request.
(() => {
  let files = {};
  let assets = {};
  const loading = new Map();
  // A request's key: its path's parts decoded, its parameters sorted, empty ones and desc=0 left
  // out (agent_eval/view/export.py writes the same keys).
  const key = (path) => {
    const [base, query = ""] = path.split("?");
    const params = [...new URLSearchParams(query)].filter(([k, v]) => v !== "" && !(k === "desc" && v === "0"));
    params.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const decoded = base.split("/").map(decodeURIComponent).join("/");
    return params.length ? decoded + "?" + new URLSearchParams(params) : decoded;
  };
  window.agentEvalManifest = (answers, images, start) => {
    files = answers;
    assets = images;
    if (!location.hash) history.replaceState(null, "", start);
  };
  window.agentEvalData = (k, body) => loading.get(k)?.resolve(body);
  window.agentEvalCopy = {
    get(path) {
      const k = key(path);
      if (!(k in files)) {
        return Promise.reject(new Error(`not in this static copy: ${path} (filters, sorts and tokens `
          + "need the live view, agent-eval view)"));
      }
      if (!loading.has(k)) {
        const waiting = {};
        waiting.promise = new Promise((resolve, reject) => Object.assign(waiting, { resolve, reject }));
        loading.set(k, waiting);
        const script = Object.assign(document.createElement("script"), { src: files[k] });
        script.onerror = () => waiting.reject(new Error(`${files[k]} is missing from this static copy`));
        document.head.append(script);
      }
      return loading.get(k).promise;
    },
    asset: (path) => assets[key(path.split("?")[0])] ?? path,
  };
})();
