package tools

import "github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"

// cancelUnrun cancels the work of job j, cancelled at once by its caller
// because no runner would see the cancel (it was queued, or its server
// stopped): for a research job, its interaction, which would otherwise
// run on at Google, billed, for nobody. A cancelled interaction, or one
// already done, is answered as it is; a failure is left to the API's own
// end of the interaction.
func (d *Deps) cancelUnrun(j jobs.Job) {
	if j.Tool != "research" || j.Resume == "" || d.Research == nil {
		return
	}
	rs, err := d.Research()
	if err != nil {
		return
	}
	(&researchRun{rs: rs, id: j.Resume}).cancel()
}
