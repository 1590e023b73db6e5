// sim-views.js holds what the classroom's scripts look up of a run's
// service (its words, its API path); the server
// draws the run's card (views.RunParts), which sim-panel.js swaps in.

// serviceWords are the classroom's words of every registered service
// (lockservice.ClassroomsWords, #service-words): each service's classroom
// supplies its own, so nothing here branches on a service's name.
const serviceWords = JSON.parse((document.getElementById('service-words') || {}).textContent || '{}');

// wordsOf is the classroom words of a service, named as the classroom API
// names it: a run that names none is on the default service.
export function wordsOf(service) {
  const all = serviceWords.services || {};
  return all[service || serviceWords.default] || { title: service || '' };
}

// sideBySide is scenario 12 as the scenario list shows it: its id, title
// and description (lockservice.SideBySide).
export function sideBySide() {
  return serviceWords.side || {};
}

// serviceQuery is what an API path adds to reach a service's classroom:
// nothing for the default service.
export function serviceQuery(service) {
  return service && service !== serviceWords.default ? `?service=${encodeURIComponent(service)}` : '';
}
